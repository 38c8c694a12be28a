#include "paper/harness/environment.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <vector>

#include "ops/cpu/isa.h"

namespace fs = std::filesystem;

namespace ag::paper {

std::string cpu_device() {
  // Vendors reuse one model name across generations ("AMD EPYC" covers Zen 2 to Zen 5), so the
  // family and model numbers go with it, and the instruction set the kernels run (Note [Kernel
  // instruction sets], ops/cpu/isa.h): the same machine kind may be AVX2-only or AVX-512.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown CPU", family, number;
  auto value = [&] { return line.substr(line.find(':') + 2); };
  while (std::getline(cpuinfo, line) && line.find_first_not_of(" \t") != std::string::npos) {
    if (line.rfind("model name", 0) == 0) {
      model = value();
    } else if (line.rfind("cpu family", 0) == 0) {
      family = value();
    } else if (line.rfind("model\t", 0) == 0) {
      number = value();
    }
  }
  if (!family.empty() && !number.empty()) model += " (family " + family + ", model " + number + ")";
  return "cpu: " + model + ", " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " cores, " +
         ops::cpu_isa_name(ops::selected_cpu_isa()) + " kernels";
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one.empty() ? "unknown" : one;
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

const char* build_mode() {
#if defined(__OPTIMIZE__) && defined(NDEBUG)
  return "optimized (-c opt)";
#else
  return "NOT optimized (build with -c opt for real figures)";
#endif
}

std::string run_command(const std::string& command, int* status) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    *status = -1;
    return output;
  }
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  const int rc = pclose(pipe);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return output;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  std::string field;
  while (std::getline(in, field, '\t')) fields.push_back(field);
  return fields;
}

namespace {
std::string program_path;
}  // namespace

void set_program_path(const char* argv0) { program_path = argv0 ? argv0 : ""; }

fs::path locate(const std::string& relative) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates = {fs::path(relative),
                                      fs::path(program_path + ".runfiles/autograd") / relative,
                                      fs::path(self.string() + ".runfiles/autograd") / relative,
                                      self.parent_path() / fs::path(relative).filename()};
  if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY"))
    candidates.push_back(fs::path(ws) / relative);
  for (const fs::path& p : candidates) {
    if (fs::exists(p, ec)) return fs::absolute(p);
  }
  return {};
}

fs::path peers_dir() {
  if (const char* dir = std::getenv("AG_PEERS_DIR"); dir && *dir) return dir;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache)
    return fs::path(cache) / "autograd-peers";
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/tmp") / ".cache" / "autograd-peers";
}

}  // namespace ag::paper
