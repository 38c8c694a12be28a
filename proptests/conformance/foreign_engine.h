#pragma once

// Note [Engine adapters]
// A foreign engine is anything that can run a conformance program and write its records: this
// project compares itself with PyTorch, and the same programs can fuzz other autograd engines.
// An adapter has two jobs:
//   script(): the program in the engine's own language (for PyTorch: torch_script.cc, a Python
//             script over torch_runtime.py's helpers), readable and runnable by hand;
//   run():    the script's records, from the engine itself.
// Adapters that run in an interpreter share ScriptServer: one long-lived process (e.g.
// `python3 torch_runtime.py --serve`) fed scripts over a pipe. JAX ("jax") runs the functional
// subset only (leaves, ops, transform statements: the mode check's programs, Note [PyTorch
// against itself]): jax_runtime.py runs PyTorch's scripts through torch_runtime.py with the
// transform statements' bodies on JAX, so it needs no renderer of its own; whole programs in JAX
// would need a jax_script.cc renderer with the same record format (records.h).

#include <sys/types.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proptests/conformance/program.h"
#include "proptests/conformance/records.h"
#include "proptests/foreign/crash_signature.h"

namespace ag::proptests {

class ForeignEngine {
 public:
  virtual ~ForeignEngine() = default;
  virtual std::string name() const = 0;  // "pytorch"
  virtual std::string version() = 0;     // e.g. "torch 2.15.0 (python3 at ...)"
  virtual std::string script(const ConformanceProgram& program, const std::string& title) const = 0;
  virtual std::string runtime_path() const = 0;  // the helper module scripts import
  // Runs a script; throws std::runtime_error when the engine itself fails.
  virtual Records run(const std::string& script) = 0;
  // Runs a script in a new process of the engine, with nothing left by earlier scripts (a
  // memory-safety bug of the engine's, pytorch-internal-error, may corrupt its process before it
  // crashes, and change the records of the scripts it runs until then).
  virtual Records run_fresh(const std::string& script) = 0;
  // The records of the script at `path` with each raise line followed by " # " and the error
  // message, for people; empty if the adapter cannot say.
  virtual std::string explain(const std::string& path) = 0;
  // How the engine's process ended when it last died or hung on a script (its records were then
  // "s0 reference-failed"), once; nothing when it has not since the last call.
  virtual std::optional<ForeignOutcome> take_crash() { return std::nullopt; }
  // Runs a standalone script (plain PyTorch, proptests/foreign/standalone_script.h) in a new
  // process of its own with the engine's crash handlers on, to the end or the time limit; how the
  // process ended. Nothing when the adapter cannot run one.
  virtual std::optional<ForeignOutcome> run_standalone(const std::string& script) {
    (void)script;
    return std::nullopt;
  }
};

// Runs `argv` to its end, stdout discarded, stderr kept; past `time_limit_s` (0: none) the
// process gets SIGABRT (for faulthandler's dump), then SIGKILL, and counts as hung.
ForeignOutcome run_process(const std::vector<std::string>& argv, double time_limit_s);

// A child process that answers "<bytes>\n<script>" on stdin with "<bytes>\n<records>". Its
// stderr goes to a file of its own, read when it dies (crash_signature.h); a script it has not
// answered within `time_limit_s` (0: no limit) counts as a hang: the server gets SIGABRT (for
// faulthandler's dump), then SIGKILL.
class ScriptServer {
 public:
  explicit ScriptServer(std::vector<std::string> argv, double time_limit_s = 0);
  ~ScriptServer();
  ScriptServer(const ScriptServer&) = delete;
  ScriptServer& operator=(const ScriptServer&) = delete;
  // The reply, or nothing when the server died or hung on this script (it is restarted).
  std::optional<std::string> request(const std::string& script);
  // What the running server wrote on stderr since the last call.
  std::string take_stderr();
  // How the server ended when request() last returned nothing, once.
  std::optional<ForeignOutcome> take_death() {
    std::optional<ForeignOutcome> out = std::move(death_);
    death_.reset();
    return out;
  }
  // Replaces the server by a new process.
  void restart() {
    stop();
    start();
  }

 private:
  void start();
  void stop();
  std::vector<std::string> argv_;
  double time_limit_s_ = 0;
  int pid_ = -1;
  int stderr_fd_ = -1;     // the server's stderr, an unlinked file
  off_t stderr_read_ = 0;  // how much of it take_stderr() has returned
  int last_status_ = 0;    // waitpid()'s, when stop() last reaped a server
  std::string last_stderr_;
  std::optional<ForeignOutcome> death_;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

// Where the interpreter and the runtime module come from.
struct ForeignOptions {
  // Empty: the first of $AG_PEER_PYTHON, the peers' venv (tools/setup.sh --peers: $AG_PEERS_DIR
  // or ~/.cache/autograd-peers), python3, /usr/bin/python3 that imports the engine.
  std::string python;
  std::string runtime;       // empty: found beside the binary (runfiles) or in the workspace
  double time_limit_s = 60;  // per script; beyond it the engine hangs (0: no limit)
};

// "pytorch", and "jax" (the functional subset: programs of leaves, ops and transform statements).
std::vector<std::string> foreign_engine_names();
// Throws std::runtime_error naming what is missing (unknown name, no interpreter, no runtime).
std::unique_ptr<ForeignEngine> make_foreign_engine(const std::string& name,
                                                   const ForeignOptions& options = {});

}  // namespace ag::proptests
