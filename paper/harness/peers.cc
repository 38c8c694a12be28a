#include "paper/harness/peers.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

#include "paper/harness/environment.h"

namespace fs = std::filesystem;

namespace ag::paper {

namespace {

std::string format_seconds(double s) {
  std::ostringstream out;
  out << s << " s";
  return out.str();
}

}  // namespace

PeerProcess::PeerProcess(std::string label, const std::vector<std::string>& argv, int threads)
    : label_(std::move(label)) {
  // A peer that exited closes its pipe; writing to it must fail with EPIPE, not kill reproduce.
  signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  if (argv.empty() || pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    reason_ = "could not start";
    return;
  }
  const fs::path log = fs::temp_directory_path() / ("reproduce-peer-" + label_ + ".log");
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // an interrupted reproduce leaves no peer behind
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    const int err = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err >= 0) dup2(err, STDERR_FILENO);
    const std::string n = std::to_string(threads);
    setenv("OMP_NUM_THREADS", n.c_str(), 1);
    setenv("MKL_NUM_THREADS", n.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::printf("unavailable\tcannot execute %s: %s\n", args[0], std::strerror(errno));
    std::fflush(stdout);
    _exit(3);
  }
  close(in[0]);
  close(out[1]);
  if (pid < 0) {
    close(in[1]);
    close(out[0]);
    reason_ = "could not start (fork failed)";
    return;
  }
  pid_ = pid;
  to_peer_ = in[1];
  from_peer_ = out[0];
  std::string line;
  while (read_line(&line, 300)) {  // importing torch can take a while on a busy machine
    const std::vector<std::string> f = split_tabs(line);
    if (f.size() == 2 && f[0] == "peer") {
      description_ = f[1];
    } else if (f.size() >= 2 && f[0] == "unavailable") {
      stop(f[1] + " (tools/setup.sh --peers installs the peers)");
      return;
    } else if (line == "ready") {
      return;
    }
  }
  stop(reason_.empty() ? "exited before it was ready (log: " + log.string() + ")" : reason_);
}

PeerProcess::~PeerProcess() { stop("done"); }

void PeerProcess::stop(const std::string& why) {
  if (reason_.empty()) reason_ = why;
  if (pid_ <= 0) return;
  if (to_peer_ >= 0) {
    const char quit[] = "quit\n";
    [[maybe_unused]] ssize_t ignored = write(to_peer_, quit, sizeof quit - 1);
    close(to_peer_);
  }
  // Give it a moment to exit by itself, then insist.
  for (int i = 0; i < 50; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    usleep(20000);
  }
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (from_peer_ >= 0) close(from_peer_);
  pid_ = to_peer_ = from_peer_ = -1;
}

bool PeerProcess::read_line(std::string* line, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      *line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p = {from_peer_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[4096];
    const ssize_t n = read(from_peer_, chunk, sizeof chunk);
    if (n <= 0) return false;  // the peer exited
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

std::optional<std::vector<double>> PeerProcess::run(const std::vector<std::string>& task,
                                                    double timeout_s) {
  if (!available()) return std::nullopt;
  std::string request;
  for (const std::string& field : task) request += (request.empty() ? "" : "\t") + field;
  request += "\n";
  std::string line;
  if (write(to_peer_, request.data(), request.size()) != static_cast<ssize_t>(request.size()) ||
      !read_line(&line, timeout_s)) {
    stop(label_ + " stopped answering during '" + task.front() + "' (no answer within " +
         format_seconds(timeout_s) + ")");
    std::cout << "  peer " << label_ << ": " << reason_ << std::endl;
    return std::nullopt;
  }
  const std::vector<std::string> f = split_tabs(line);
  if (f.empty() || f[0] != "ok") {
    std::cout << "  peer " << label_ << ": " << task.front() << ": " << line << std::endl;
    return std::nullopt;
  }
  std::vector<double> values;
  for (size_t i = 1; i < f.size(); ++i) values.push_back(std::atof(f[i].c_str()));
  return values;
}

std::optional<double> PeerProcess::value(const std::vector<std::string>& task, double timeout_s) {
  std::optional<std::vector<double>> values = run(task, timeout_s);
  if (!values || values->empty()) return std::nullopt;
  return values->front();
}

std::string PeerProcess::short_name() const {
  if (description_.empty()) return label_;
  return description_.substr(0, std::min(description_.find(" ("), description_.find(',')));
}

std::string Peers::missing(const PeerProcess* peer) const {
  if (!skipped.empty()) return "skipped";
  if (!peer || !peer->available()) return "not installed";
  return "failed";
}

std::string Peers::describe() const {
  if (!skipped.empty()) return "Peers: " + skipped + ".\n";
  std::ostringstream s;
  s << "Peers (at our thread count; each repetition interleaved with ours):\n";
  for (const PeerProcess* p : {torch.get(), libtorch.get(), jax.get()}) {
    if (!p) continue;
    s << "- " << p->label() << ": "
      << (p->available() || !p->description().empty() ? p->description()
                                                      : "not measured: " + p->reason())
      << "\n";
  }
  return s.str();
}

namespace {

// The Python that runs the peers: $AG_PEER_PYTHON, else the venv tools/install_peers.sh made.
std::string peer_python() {
  if (const char* p = std::getenv("AG_PEER_PYTHON"); p && *p) return p;
  const fs::path venv = peers_dir() / "venv" / "bin" / "python";
  std::error_code ec;
  return fs::exists(venv, ec) ? venv.string() : "python3";
}

std::unique_ptr<PeerProcess> python_peer(const std::string& label, const std::string& script,
                                         const std::string& python, int threads) {
  const fs::path path = locate("paper/peers/" + script);
  if (path.empty())
    return std::make_unique<PeerProcess>(label, "paper/peers/" + script + " not found");
  return std::make_unique<PeerProcess>(
      label, std::vector<std::string>{python, path.string(), "--threads", std::to_string(threads)},
      threads);
}

// Builds (or finds, cached) the libtorch C++ peer against the torch that `python` imports.
std::unique_ptr<PeerProcess> libtorch_peer(const std::string& python, int threads) {
  const fs::path script = locate("paper/peers/build_libtorch_peer.sh");
  std::string binary;
  if (!script.empty()) {
    std::cout << "peers: building or finding the libtorch C++ peer (about a minute when it is "
                 "built)"
              << std::endl;
    int status = 0;
    binary =
        run_command(shell_quote(script.string()) + " " + shell_quote(python) + " 2>&1", &status);
    while (!binary.empty() && binary.back() == '\n') binary.pop_back();
    if (status != 0) {
      std::cout << "peers: libtorch C++ peer not built: "
                << binary.substr(binary.size() > 300 ? binary.size() - 300 : 0) << std::endl;
      binary.clear();
    } else {
      binary = binary.substr(binary.rfind('\n') == std::string::npos ? 0 : binary.rfind('\n') + 1);
    }
  }
  if (binary.empty())
    return std::make_unique<PeerProcess>("libtorch", "not built against the wheel");
  return std::make_unique<PeerProcess>(
      "libtorch", std::vector<std::string>{binary, "--threads", std::to_string(threads)}, threads);
}

}  // namespace

Peers start_peers(int threads, const std::string& skip_reason) {
  Peers peers;
  peers.skipped = skip_reason;
  if (!skip_reason.empty()) return peers;
  const std::string python = peer_python();
  peers.torch = python_peer("PyTorch", "torch_peer.py", python, threads);
  peers.jax = python_peer("JAX", "jax_peer.py", python, threads);
  if (peers.torch->available()) {
    peers.libtorch = libtorch_peer(python, threads);
  } else {
    peers.libtorch = std::make_unique<PeerProcess>("libtorch", "needs PyTorch's wheel");
  }
  for (const PeerProcess* p : {peers.torch.get(), peers.libtorch.get(), peers.jax.get()}) {
    std::cout << "peers: " << p->label() << ": "
              << (p->available() ? p->description() : "not available: " + p->reason()) << std::endl;
  }
  return peers;
}

}  // namespace ag::paper
