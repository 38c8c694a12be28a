#pragma once

// Note [Crash signatures]
// A foreign engine's process that dies on a program (a signal), aborts, hangs, or raises an
// internal assert is a finding about that engine, not a program to drop. Its signature says which
// bug it is, so that many programs that hit one bug read as one group:
//   kind      signal, abort, internal assert or hang;
//   headline  the signal's name ("SIGSEGV"), or the assert's or the abort's message, with
//             numbers, addresses and paths normalized ("... INTERNAL ASSERT FAILED at
//             torch/csrc/autograd/engine.cpp, please report a bug to PyTorch.");
//   frames    the top frames of the engine's own native stack (PyTorch's: libtorch, libc10,
//             torch._C, or at::/c10::/torch:: symbols), demangled, without addresses, offsets,
//             argument lists or compiler clone suffixes; where the dump has no native frame of the
//             engine's, the engine's own Python frames from faulthandler ("torch/autograd/graph.py
//             in _engine_run_backward"), without line numbers.
// Normalization is a function of the text alone, so the same bug gives the same signature in every
// run: different load addresses, line numbers of another build, other tensor sizes in the message.
// Native stacks are read in the forms that reach stderr: glibc's backtrace_symbols()
// ("lib.so(sym+0x1a) [0x7f..]"), PyTorch's c10::Error stack ("frame #3: sym + 0x1a (0x7f.. in
// lib.so)"), Python 3.13 faulthandler's C stack ("Binary file "lib.so", at sym+0x1a [0x7f..]")
// and gdb's ("#3  0x7f.. in sym (args) from lib.so").

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ag::proptests {

// How a foreign engine's process ended on one program.
struct ForeignOutcome {
  bool timed_out = false;  // killed at the time limit
  int exit_code = 0;       // when it exited
  int signal = 0;          // when a signal ended it (WTERMSIG), else 0
  std::string stderr_text;
  // From waitpid()'s status.
  static ForeignOutcome from_wait_status(int status, bool timed_out, std::string stderr_text);
};

enum class CrashKind { kSignal, kAbort, kInternalAssert, kHang };
const char* crash_kind_name(CrashKind kind);  // "signal", "abort", "internal-assert", "hang"

struct Signature {
  CrashKind kind = CrashKind::kSignal;
  std::string headline;
  std::vector<std::string> frames;
  // One line: "signal: SIGSEGV | frame | frame".
  std::string key() const;
  bool operator==(const Signature& o) const { return key() == o.key(); }
  bool operator!=(const Signature& o) const { return !(*this == o); }
  bool operator<(const Signature& o) const { return key() < o.key(); }
};

// The signature of a crash, or nothing when the process ended normally (exit status 0, or an
// ordinary Python exception without an internal assert). `max_frames` bounds the frames kept.
std::optional<Signature> crash_signature(const ForeignOutcome& outcome, size_t max_frames = 5);

// The pieces, for tests and for other engines' adapters.
// Hex addresses -> "0x?", decimal numbers (not part of a name) -> "N", paths -> from their
// torch/, aten/, c10/ or caffe2/ directory on (else the file name), ":line" dropped, blanks
// collapsed.
std::string normalize_message(const std::string& text);
// A demangled native symbol without its argument list, "const", or ".isra.0"/" [clone .cold]"
// suffixes; mangled names ("_ZN...") are demangled first.
std::string normalize_symbol(const std::string& symbol);
// The engine's own frames of a native or (failing that) Python stack dump, top first.
std::vector<std::string> engine_frames(const std::string& stderr_text, size_t max_frames);

// Crashing programs grouped by signature, each group in the order first seen.
class CrashGroups {
 public:
  struct Group {
    Signature signature;
    std::string first_id;       // e.g. "seed 7 program 1234"
    std::string first_program;  // its text, the one to reduce
    int64_t count = 0;
    std::vector<std::string> examples;  // up to 5 ids
  };
  // Returns whether the signature is new.
  bool add(const Signature& signature, const std::string& id, const std::string& program_text);
  const std::vector<Group>& groups() const { return groups_; }
  const Group* find(const Signature& signature) const;
  int64_t crashes() const { return crashes_; }
  // One paragraph per group, most programs first (ties: first seen first).
  std::string report() const;

 private:
  std::vector<Group> groups_;
  std::map<std::string, size_t> index_;  // key -> groups_ index
  int64_t crashes_ = 0;
};

// A crash log: one entry per crashing program, appended as it happens, read back into groups
// after the run (of one campaign or of several, concatenated):
//   crash seed 34 program 479
//   signature internal-assert: out != nullptr INTERNAL ASSERT FAILED at ... | frame | frame
//   <the program's text, one statement per line>
//   end
std::string crash_log_entry(const Signature& signature, const std::string& id,
                            const std::string& program_text);
// Throws std::runtime_error on a malformed log.
CrashGroups read_crash_log(const std::string& text);
// Every entry's id and program text, in the log's order.
std::vector<std::pair<std::string, std::string>> read_crash_log_entries(const std::string& text);
// The signature whose key() is `key` (its frames kept in the headline: equal keys, equal
// signatures).
Signature signature_of_key(const std::string& key);

}  // namespace ag::proptests
