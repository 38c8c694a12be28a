#include "paper/harness/load.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "paper/harness/environment.h"

namespace ag::paper {

std::vector<Condition> measuring_conditions(const std::string& busy, int threads) {
  const std::string n = std::to_string(threads);
  const std::vector<Condition> loads = {
      {"busy: bursty",
       n + " threads each busy 20 ms / idle 20 ms (a parallel build's rhythm)",
       {"bursty", n, "20", "20"}},
      {"busy: compile",
       n + " g++ -O2 compiles at a time, over and over (a real parallel build)",
       {"compile", n}},
      {"busy: spin", "1 thread in a plain busy loop", {"spin", "1"}},
  };
  std::vector<Condition> conditions = {{"quiet", "no load of ours (the machine is shared)", {}}};
  std::istringstream names(busy == "all" ? "bursty,compile,spin" : busy);
  std::string name;
  while (std::getline(names, name, ',')) {
    bool found = false;
    for (const Condition& c : loads) {
      if (c.load.front() == name) {
        conditions.push_back(c);
        found = true;
      }
    }
    if (!found) {
      throw std::invalid_argument("--busy: unknown load '" + name +
                                  "' (known: bursty, compile, spin, all)");
    }
  }
  return conditions;
}

namespace {

struct LoadRange {
  std::string condition;
  double low, high;
};
std::vector<LoadRange> load_ranges;

void note_load_average(const std::string& condition) {
  const double now = std::atof(load_average().c_str());
  for (LoadRange& r : load_ranges) {
    if (r.condition == condition) {
      r.low = std::min(r.low, now);
      r.high = std::max(r.high, now);
      return;
    }
  }
  load_ranges.push_back({condition, now, now});
}

}  // namespace

std::string load_averages_seen() {
  std::ostringstream s;
  s.precision(3);
  for (const LoadRange& r : load_ranges) {
    s << (s.tellp() > 0 ? ", " : "") << r.condition << " " << r.low << "-" << r.high;
  }
  return s.str().empty() ? "none noted" : s.str();
}

Load::Load(const Condition& condition) : condition_(condition.name) {
  note_load_average(condition_);
  if (condition.quiet()) return;
  const std::filesystem::path binary = locate("paper/load_generator");
  if (binary.empty()) throw std::runtime_error("paper/load_generator not found");
  std::vector<std::string> argv = {binary.string()};
  argv.insert(argv.end(), condition.load.begin(), condition.load.end());
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // an interrupted reproduce leaves no load behind
    execv(args[0], args.data());
    _exit(127);
  }
  if (pid_ < 0) throw std::runtime_error("cannot start paper/load_generator (fork failed)");
  std::cout << "  load: " << condition.name << " (load_generator, PID " << pid_ << ")" << std::endl;
  // Let the neighbour reach its rhythm (threads started, first compiles under way).
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    throw std::runtime_error("paper/load_generator " + condition.load.front() +
                             " exited at once (status " + std::to_string(status) + ")");
  }
}

Load::~Load() {
  note_load_average(condition_);
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::cout << "  load: load_generator (PID " << pid_ << ") ended with status " << status
              << std::endl;
  }
}

}  // namespace ag::paper
