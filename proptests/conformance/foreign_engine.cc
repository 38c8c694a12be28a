#include "proptests/conformance/foreign_engine.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include "proptests/conformance/torch_script.h"

namespace ag::proptests {
namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a command, returns its stdout (empty on failure).
std::string capture(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>/dev/null").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  if (pclose(p) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// A file of this package: in the runfiles (bazel run/test), else in the workspace.
std::string find_package_file(const std::string& file) {
  namespace fs = std::filesystem;
  const std::string rel = "proptests/conformance/" + file;
  std::vector<fs::path> candidates = {rel};
  if (const char* r = std::getenv("RUNFILES_DIR"))
    candidates.push_back(fs::path(r) / "autograd" / rel);
  if (const char* w = std::getenv("BUILD_WORKSPACE_DIRECTORY"))
    candidates.push_back(fs::path(w) / rel);
  for (const fs::path& p : candidates) {
    if (fs::exists(p)) return fs::absolute(p).string();
  }
  throw std::runtime_error("cannot find " + rel + " (run through bazel, or from the workspace)");
}

// PyTorch, or JAX for the functional subset: jax_runtime.py runs the same scripts through
// torch_runtime.py with the transform statements on JAX (its docstring).
class PyTorchEngine final : public ForeignEngine {
 public:
  // `name` "pytorch" (torch_runtime.py) or "jax" (jax_runtime.py).
  PyTorchEngine(const ForeignOptions& o, std::string name)
      : name_(std::move(name)),
        runtime_(o.runtime.empty()
                     ? find_package_file(name_ == "jax" ? "jax_runtime.py" : "torch_runtime.py")
                     : o.runtime),
        python_(find_python(o.python)),
        time_limit_s_(o.time_limit_s),
        server_({python_, runtime_, "--serve"}, o.time_limit_s) {}

  std::string name() const override { return name_; }
  std::string version() override {
    const std::string module = name_ == "jax" ? "jax" : "torch";
    return module + " " +
           capture(shell_quote(python_) + " -c 'import " + module + "; print(" + module +
                   ".__version__)'") +
           " (" + python_ + ")";
  }
  std::string script(const ConformanceProgram& p, const std::string& title) const override {
    return torch_script(p, title);
  }
  std::string runtime_path() const override { return runtime_; }
  std::optional<ForeignOutcome> take_crash() override {
    std::optional<ForeignOutcome> out = server_.take_death();
    if (!out) out = std::move(raised_);
    raised_.reset();
    return out;
  }
  std::string explain(const std::string& path) override {
    return capture(shell_quote(python_) + " " + shell_quote(runtime_) + " --explain " +
                   shell_quote(path));
  }
  std::optional<ForeignOutcome> run_standalone(const std::string& script) override {
    char path[] = "/tmp/ag-standalone-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    const bool written =
        write(fd, script.data(), script.size()) == static_cast<ssize_t>(script.size());
    close(fd);
    if (!written) throw std::runtime_error("cannot write a standalone script");
    // The same handlers and stacks as the server's (torch_runtime.py serve()): faulthandler's
    // Python stacks, PyTorch's native ones, and asserts' native stacks, so that signatures
    // compare.
    const ForeignOutcome out =
        run_process({python_, "-X", "faulthandler", "-c",
                     "import os, sys\n"
                     "os.environ['TORCH_SHOW_CPP_STACKTRACES'] = '1'\n"
                     "import torch\n"
                     "torch._C._set_print_stack_traces_on_fatal_signal(True)\n"
                     "p = sys.argv[1]\n"
                     "exec(compile(open(p).read(), p, 'exec'), {'__name__': '__main__'})\n",
                     path},
                    time_limit_s_);
    unlink(path);
    return out;
  }
  Records run_fresh(const std::string& script) override {
    server_.restart();
    return run(script);
  }
  Records run(const std::string& script) override {
    const std::optional<std::string> reply = server_.request(script);
    // PyTorch crashed on the script (a segfault, seen with copy_ into views of custom Function
    // outputs): nothing to compare with (pytorch-internal-error).
    if (!reply) return Records{{"s0 reference-failed"}};
    if (reply->rfind("error ", 0) == 0) throw std::runtime_error("pytorch: " + *reply);
    // An internal assert that PyTorch raised as an exception: the runtime ends the records with
    // "reference-failed" and writes the message on stderr (torch_runtime.py).
    const std::string err = server_.take_stderr();
    if (reply->find(" reference-failed") != std::string::npos) {
      ForeignOutcome assert_failed;
      assert_failed.stderr_text = err;
      raised_ = assert_failed;
    }
    return Records::parse(*reply);
  }

 private:
  static std::string find_python(const std::string& given) {
    std::vector<std::string> pythons;
    if (!given.empty()) pythons.push_back(given);
    if (const char* p = std::getenv("AG_PEER_PYTHON")) pythons.push_back(p);
    // The peers' venv that tools/setup.sh --peers makes (paper/peers/README.md).
    if (const char* d = std::getenv("AG_PEERS_DIR"))
      pythons.push_back(std::string(d) + "/venv/bin/python");
    const char* cache = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    if (cache || home) {
      pythons.push_back((cache ? std::string(cache) : std::string(home) + "/.cache") +
                        "/autograd-peers/venv/bin/python");
    }
    pythons.push_back("python3");
    pythons.push_back("/usr/bin/python3");
    for (const std::string& py : pythons) {
      if (!capture(shell_quote(py) + " -c 'import torch; print(1)'").empty()) return py;
    }
    throw std::runtime_error(
        "no python here imports torch: install it (tools/setup.sh --peers), or name the "
        "interpreter in AG_PEER_PYTHON (export also takes --python)");
  }

  std::string name_;
  std::string runtime_;
  std::string python_;
  double time_limit_s_;
  ScriptServer server_;
  std::optional<ForeignOutcome> raised_;  // the last script's internal assert, if it had one
};

}  // namespace

ScriptServer::ScriptServer(std::vector<std::string> argv, double time_limit_s)
    : argv_(std::move(argv)), time_limit_s_(time_limit_s) {
  start();
}
ScriptServer::~ScriptServer() { stop(); }

void ScriptServer::start() {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) throw std::runtime_error("pipe failed");
  char err_path[] = "/tmp/ag-foreign-stderr-XXXXXX";
  stderr_fd_ = mkstemp(err_path);
  stderr_read_ = 0;
  if (stderr_fd_ < 0) throw std::runtime_error("mkstemp failed");
  unlink(err_path);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(stderr_fd_, 2);
    close(in[1]);
    close(out[0]);
    std::vector<char*> args;
    for (std::string& a : argv_) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  to_ = fdopen(in[1], "w");
  from_ = fdopen(out[0], "r");
}

void ScriptServer::stop() {
  if (to_) fclose(to_);
  if (from_) fclose(from_);
  to_ = from_ = nullptr;
  if (pid_ > 0) {
    last_status_ = 0;
    waitpid(pid_, &last_status_, 0);  // it exits at the end of its input
  }
  pid_ = -1;
  last_stderr_.clear();
  if (stderr_fd_ >= 0) {
    char buf[4096];
    ssize_t n;
    off_t at = 0;
    while ((n = pread(stderr_fd_, buf, sizeof(buf), at)) > 0) {
      last_stderr_.append(buf, static_cast<size_t>(n));
      at += n;
    }
    close(stderr_fd_);
  }
  stderr_fd_ = -1;
}

std::string ScriptServer::take_stderr() {
  std::string out;
  char buf[4096];
  ssize_t n;
  while (stderr_fd_ >= 0 && (n = pread(stderr_fd_, buf, sizeof(buf), stderr_read_)) > 0) {
    out.append(buf, static_cast<size_t>(n));
    stderr_read_ += n;
  }
  return out;
}

std::optional<std::string> ScriptServer::request(const std::string& script) {
  signal(SIGPIPE, SIG_IGN);  // a dead server is reported below, not by a signal
  size_t n = 0;
  bool hung = false;
  const bool sent = std::fprintf(to_, "%zu\n", script.size()) >= 0 &&
                    std::fwrite(script.data(), 1, script.size(), to_) == script.size() &&
                    std::fflush(to_) == 0;
  if (sent && time_limit_s_ > 0) {
    pollfd reply{fileno(from_), POLLIN, 0};
    if (poll(&reply, 1, static_cast<int>(time_limit_s_ * 1000)) == 0) {
      hung = true;
      kill(pid_, SIGABRT);  // faulthandler dumps the Python stacks
      usleep(500 * 1000);
      kill(pid_, SIGKILL);
    }
  }
  if (!sent || hung || std::fscanf(from_, "%zu", &n) != 1 || std::fgetc(from_) != '\n') {
    // The server died or hung running this script: a fresh one serves the next.
    stop();
    death_ = ForeignOutcome::from_wait_status(last_status_, hung, last_stderr_);
    start();
    return std::nullopt;
  }
  std::string reply(n, '\0');
  if (std::fread(reply.data(), 1, n, from_) != n) throw std::runtime_error("short reply");
  return reply;
}

ForeignOutcome run_process(const std::vector<std::string>& argv, double time_limit_s) {
  char err_path[] = "/tmp/ag-process-stderr-XXXXXX";
  const int err = mkstemp(err_path);
  if (err < 0) throw std::runtime_error("mkstemp failed");
  unlink(err_path);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(err, 2);
    std::vector<std::string> copy = argv;
    std::vector<char*> args;
    for (std::string& a : copy) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  bool hung = false;
  for (int waited_ms = 0; waitpid(pid, &status, WNOHANG) == 0; waited_ms += 10) {
    if (time_limit_s > 0 && waited_ms >= time_limit_s * 1000) {
      hung = true;
      kill(pid, SIGABRT);  // faulthandler dumps the Python stacks
      usleep(500 * 1000);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    usleep(10 * 1000);
  }
  std::string text;
  char buf[4096];
  ssize_t n;
  off_t at = 0;
  while ((n = pread(err, buf, sizeof(buf), at)) > 0) {
    text.append(buf, static_cast<size_t>(n));
    at += n;
  }
  close(err);
  return ForeignOutcome::from_wait_status(status, hung, std::move(text));
}

std::vector<std::string> foreign_engine_names() { return {"pytorch", "jax"}; }

std::unique_ptr<ForeignEngine> make_foreign_engine(const std::string& name,
                                                   const ForeignOptions& options) {
  if (name == "pytorch" || name == "jax") return std::make_unique<PyTorchEngine>(options, name);
  throw std::runtime_error("unknown foreign engine '" + name + "' (known: pytorch, jax)");
}

}  // namespace ag::proptests
