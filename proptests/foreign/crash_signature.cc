#include "proptests/foreign/crash_signature.h"

#include <cxxabi.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace ag::proptests {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(line);
  }
  return out;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string collapse_blanks(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool blank = std::isspace(static_cast<unsigned char>(c));
    if (blank && (out.empty() || out.back() == ' ')) continue;
    out += blank ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGTRAP:
      return "SIGTRAP";
    default:
      return nullptr;
  }
}

// The signal a faulthandler or shell message names, when the exit status did not say.
int signal_from_text(const std::string& text) {
  static const std::pair<const char*, int> kMessages[] = {
      {"Fatal Python error: Segmentation fault", SIGSEGV},
      {"Fatal Python error: Aborted", SIGABRT},
      {"Fatal Python error: Bus error", SIGBUS},
      {"Fatal Python error: Floating point exception", SIGFPE},
      {"Fatal Python error: Illegal instruction", SIGILL},
  };
  for (const auto& [message, sig] : kMessages) {
    if (text.find(message) != std::string::npos) return sig;
  }
  return 0;
}

// A path's shortened form: from its last torch/, aten/, c10/ or caffe2/ component on, else its
// file name.
std::string short_path(const std::string& path) {
  std::vector<std::string> parts;
  std::string part;
  for (char c : path) {
    if (c == '/') {
      if (!part.empty()) parts.push_back(part);
      part.clear();
    } else {
      part += c;
    }
  }
  if (!part.empty()) parts.push_back(part);
  size_t from = parts.empty() ? 0 : parts.size() - 1;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i] == "torch" || parts[i] == "aten" || parts[i] == "c10" || parts[i] == "caffe2") {
      from = i;
    }
  }
  std::string out;
  for (size_t i = from; i < parts.size(); ++i) out += (i > from ? "/" : "") + parts[i];
  return out;
}

// Frames of the error machinery and of crash handlers, which every stack has.
bool is_noise(const std::string& symbol) {
  static const char* const kNoise[] = {
      "c10::Error::",
      "c10::detail::torchCheckFail",
      "c10::detail::torchInternalAssertFail",
      "c10::detail::torchCheckMsgImpl",
      "c10::get_backtrace",
      "c10::get_lazy_backtrace",
      "c10::FatalSignalHandler",
      "c10::(anonymous namespace)::GetFetchStackTrace",
      "c10::SourceLocation",
      "c10::IndexError::",
      "c10::ValueError::",
      "c10::TypeError::",
      "c10::NotImplementedError::",
      "c10::EnforceFiniteError::",
      "<unknown function>",
  };
  if (symbol.empty() || symbol == "??") return true;
  for (const char* n : kNoise) {
    if (starts_with(symbol, n)) return true;
  }
  return false;
}

// Whether a native frame is the engine's own: by its library, else by its symbol's namespace.
bool is_engine_frame(const std::string& library, const std::string& symbol) {
  if (!library.empty()) {
    for (const char* lib : {"libtorch", "libc10", "libshm", "/torch/_C", "_C.cpython", "_C.so"}) {
      if (library.find(lib) != std::string::npos) return true;
    }
  }
  for (const char* ns : {"at::", "c10::", "torch::", "caffe2::", "THP"}) {
    if (starts_with(symbol, ns)) return true;
  }
  return false;
}

struct NativeFrame {
  std::string library, symbol;
};

std::optional<NativeFrame> parse_native_frame(const std::string& raw) {
  const std::string line = trim(raw);
  std::smatch m;
  // PyTorch's c10::Error stack: "frame #3: sym + 0x1a (0x7f00 in /lib/libtorch_cpu.so)"
  static const std::regex kTorch(
      R"(^frame #\d+: (.*?)(?: \+ 0x[0-9a-fA-F]+)? \((?:0x[0-9a-fA-F]+ in )?([^()]*)\)$)");
  // glibc backtrace_symbols(): "/lib/libtorch_cpu.so(_ZN5torch3fooEv+0x1a) [0x7f00]"
  static const std::regex kGlibc(
      R"(^([^\s()]+)\(([^()+]*)(?:\+0x[0-9a-fA-F]+)?\) \[0x[0-9a-fA-F]+\]$)");
  // Python 3.13 faulthandler's C stack: "Binary file "/lib/x.so", at sym+0x1a [0x7f00]"
  static const std::regex kPython(
      R"re(^Binary file "([^"]*)"(?:, at ([^\s+]+)(?:\+0x[0-9a-fA-F]+)?)? \[0x[0-9a-fA-F]+\]$)re");
  // gdb: "#3  0x00007f00 in sym (args) from /lib/x.so" or "#3  sym (args) at file.cpp:12"
  static const std::regex kGdb(R"(^#\d+\s+(?:0x[0-9a-fA-F]+ in )?(.+)$)");
  if (std::regex_match(line, m, kTorch)) return NativeFrame{m[2].str(), m[1].str()};
  if (std::regex_match(line, m, kGlibc)) return NativeFrame{m[1].str(), m[2].str()};
  if (std::regex_match(line, m, kPython)) return NativeFrame{m[1].str(), m[2].str()};
  if (std::regex_match(line, m, kGdb)) {
    std::string rest = m[1].str();
    NativeFrame f;
    for (const char* where : {" from ", " at "}) {
      const size_t at = rest.rfind(where);
      if (at != std::string::npos) {
        f.library = rest.substr(at + std::string(where).size());
        rest.resize(at);
        break;
      }
    }
    // gdb writes the arguments' values after a blank: "sym (x=1)".
    if (const size_t args = rest.find(" ("); args != std::string::npos) rest.resize(args);
    f.symbol = rest;
    return f;
  }
  return std::nullopt;
}

// faulthandler's Python frames: '  File "/site-packages/torch/autograd/graph.py", line 825 in f'.
std::optional<std::string> parse_python_frame(const std::string& raw) {
  static const std::regex kFile(R"re(^File "([^"]*)", line \d+ in (\S+)$)re");
  std::smatch m;
  const std::string line = trim(raw);
  if (!std::regex_match(line, m, kFile)) return std::nullopt;
  const std::string path = m[1].str();
  if (path.find("/torch/") == std::string::npos && !starts_with(path, "torch/")) {
    return std::nullopt;
  }
  return short_path(path) + " in " + m[2].str();
}

// The line of `text` that contains `needle`, or "".
std::string line_with(const std::string& text, const std::string& needle) {
  for (const std::string& line : lines_of(text)) {
    if (line.find(needle) != std::string::npos) return line;
  }
  return "";
}

// "RuntimeError: msg" or "  what():  msg" -> "msg".
std::string strip_exception_prefix(const std::string& line) {
  static const std::regex kPrefix(R"(^\s*(?:[\w.]*(?:Error|Exception)|what\(\)):\s*)");
  return std::regex_replace(line, kPrefix, "", std::regex_constants::format_first_only);
}

// What an abort says of itself: C++'s what(), glibc's heap checks, a C assert.
std::string abort_message(const std::string& text) {
  for (const std::string& line : lines_of(text)) {
    const std::string t = trim(line);
    if (starts_with(t, "what():")) return strip_exception_prefix(t);
    if (t.find("Assertion `") != std::string::npos || t.find("double free") != std::string::npos ||
        t.find("corrupted ") != std::string::npos || starts_with(t, "free(): ") ||
        starts_with(t, "malloc(): ") || starts_with(t, "realloc(): ") ||
        starts_with(t, "munmap_chunk(): ")) {
      return t;
    }
  }
  return "";
}

}  // namespace

ForeignOutcome ForeignOutcome::from_wait_status(int status, bool timed_out,
                                                std::string stderr_text) {
  ForeignOutcome o;
  o.timed_out = timed_out;
  if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  o.stderr_text = std::move(stderr_text);
  return o;
}

const char* crash_kind_name(CrashKind kind) {
  switch (kind) {
    case CrashKind::kSignal:
      return "signal";
    case CrashKind::kAbort:
      return "abort";
    case CrashKind::kInternalAssert:
      return "internal-assert";
    case CrashKind::kHang:
      return "hang";
  }
  return "?";
}

std::string Signature::key() const {
  std::string out = std::string(crash_kind_name(kind)) + ": " + headline;
  for (const std::string& f : frames) out += " | " + f;
  return out;
}

std::string normalize_message(const std::string& text) {
  // Paths (with at least one '/') and the ":line" or ":line:column" after them.
  // PyTorch quotes the path of an assert: "at \"/pytorch/torch/csrc/x.cpp\":12".
  static const std::regex kPath(R"re(((?:[\w.+-]*/)+[\w.+-]+)("?)(?::\d+)*)re");
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), kPath);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += text.substr(last, static_cast<size_t>(it->position()) - last);
    out += short_path((*it)[1].str()) + (*it)[2].str();
    last = static_cast<size_t>(it->position() + it->length());
  }
  out += text.substr(last);
  static const std::regex kHex(R"(0[xX][0-9a-fA-F]+)");
  out = std::regex_replace(out, kHex, "0x?");
  // Decimal numbers that are not part of a name ("float64", "v12", "0x?" stay).
  std::string numbers;
  for (size_t i = 0; i < out.size();) {
    if (std::isdigit(static_cast<unsigned char>(out[i])) && (i == 0 || !is_name_char(out[i - 1]))) {
      size_t j = i;
      while (j < out.size() && std::isdigit(static_cast<unsigned char>(out[j]))) ++j;
      if (j == out.size() || !(std::isalpha(static_cast<unsigned char>(out[j])) || out[j] == '_')) {
        numbers += 'N';
        i = j;
        continue;
      }
      numbers.append(out, i, j - i);
      i = j;
      continue;
    }
    numbers += out[i++];
  }
  return collapse_blanks(numbers);
}

std::string normalize_symbol(const std::string& raw) {
  std::string s = trim(raw);
  if (starts_with(s, "_Z")) {
    int status = 0;
    char* d = abi::__cxa_demangle(s.c_str(), nullptr, nullptr, &status);
    if (status == 0 && d) s = d;
    std::free(d);
  }
  static const std::regex kClone(R"(\s*\[clone [^\]]*\])");
  s = std::regex_replace(s, kClone, "");
  static const std::regex kSuffix(R"((?:\.(?:isra|constprop|part|cold|lto_priv)(?:\.\d+)?)+$)");
  s = std::regex_replace(s, kSuffix, "");
  s = trim(s);
  for (const char* q : {" const", " &&", " &", " volatile"}) {
    const std::string qs = q;
    if (s.size() > qs.size() && s.compare(s.size() - qs.size(), qs.size(), qs) == 0) {
      s.resize(s.size() - qs.size());
    }
  }
  // The argument list: the parenthesized group that ends the name.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        if (i > 0) s.resize(i);
        break;
      }
    }
  }
  return collapse_blanks(s);
}

namespace {

// PyTorch's fatal signal handler (c10::FatalSignalHandler, on once
// torch._C._set_print_stack_traces_on_fatal_signal(True)) prints every thread's native stack, each
// under "SIGSEGV(11), PID: 7, Thread 9:"; the thread that received the signal is the one whose
// stack runs through fatalSignalHandler, the others only through stacktraceSignalHandler. The
// lines of every other thread's block are marked, to be skipped.
std::vector<bool> other_threads_lines(const std::vector<std::string>& lines) {
  static const std::regex kHeader(R"(^SIG[A-Z]+\(\d+\), PID: \d+, Thread \d+:$)");
  std::vector<int> block(lines.size(), -1);
  int blocks = 0, faulting = -1;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string t = trim(lines[i]);
    if (std::regex_match(t, kHeader)) {
      ++blocks;
    } else if (blocks > 0 && !t.empty() && !starts_with(t, "frame #") && t[0] != '<') {
      blocks = -blocks;  // the end of the handler's output
    }
    if (blocks <= 0) continue;
    block[i] = blocks;
    if (faulting < 0 && t.find("fatalSignalHandler") != std::string::npos) faulting = blocks;
  }
  std::vector<bool> other(lines.size(), false);
  for (size_t i = 0; i < lines.size(); ++i) {
    other[i] = block[i] > 0 && block[i] != (faulting < 0 ? 1 : faulting);
  }
  return other;
}

}  // namespace

std::vector<std::string> engine_frames(const std::string& stderr_text, size_t max_frames) {
  std::vector<std::string> native, python, python_current;
  bool in_current_thread = false;
  const std::vector<std::string> lines = lines_of(stderr_text);
  const std::vector<bool> skip = other_threads_lines(lines);
  // A message may hold several c10::Error stacks one after the other (an assert whose message
  // carries an earlier one's): the first is the assert's own, and the signature keeps it alone.
  bool first_stack_ended = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const std::string t = trim(line);
    if (starts_with(t, "Current thread ")) in_current_thread = true;
    if (starts_with(t, "Thread 0x")) in_current_thread = false;
    if (skip[i]) continue;
    if (starts_with(t, "frame #0:") && !native.empty()) first_stack_ended = true;
    if (first_stack_ended) continue;
    if (auto f = parse_native_frame(line)) {
      const std::string symbol = normalize_symbol(f->symbol);
      if (is_noise(symbol) || !is_engine_frame(f->library, symbol)) continue;
      if (native.empty() || native.back() != symbol) native.push_back(symbol);
    } else if (auto p = parse_python_frame(line)) {
      (in_current_thread ? python_current : python).push_back(*p);
    }
  }
  std::vector<std::string>& frames = !native.empty()           ? native
                                     : !python_current.empty() ? python_current
                                                               : python;
  if (frames.size() > max_frames) frames.resize(max_frames);
  return frames;
}

std::optional<Signature> crash_signature(const ForeignOutcome& outcome, size_t max_frames) {
  Signature sig;
  const std::string& text = outcome.stderr_text;
  int signal = outcome.signal;
  if (signal == 0 && outcome.exit_code > 128 && outcome.exit_code < 160) {
    signal = outcome.exit_code - 128;  // a shell's report of a child's signal
  }
  if (signal == 0) signal = signal_from_text(text);
  const std::string assert_line = line_with(text, "INTERNAL ASSERT FAILED");
  if (outcome.timed_out) {
    sig.kind = CrashKind::kHang;
    sig.headline = "no result within the time limit";
  } else if (!assert_line.empty()) {
    sig.kind = CrashKind::kInternalAssert;
    sig.headline = normalize_message(strip_exception_prefix(assert_line));
  } else if (signal == SIGABRT) {
    sig.kind = CrashKind::kAbort;
    sig.headline = "SIGABRT";
    const std::string message = abort_message(text);
    if (!message.empty()) sig.headline += ": " + normalize_message(message);
  } else if (signal != 0) {
    sig.kind = CrashKind::kSignal;
    const char* name = signal_name(signal);
    sig.headline = name ? name : "signal " + std::to_string(signal);
  } else {
    return std::nullopt;
  }
  sig.frames = engine_frames(text, max_frames);
  return sig;
}

bool CrashGroups::add(const Signature& signature, const std::string& id,
                      const std::string& program_text) {
  ++crashes_;
  const std::string key = signature.key();
  auto it = index_.find(key);
  const bool fresh = it == index_.end();
  if (fresh) {
    it = index_.emplace(key, groups_.size()).first;
    groups_.push_back(Group{signature, id, program_text, 0, {}});
  }
  Group& g = groups_[it->second];
  ++g.count;
  if (g.examples.size() < 5) g.examples.push_back(id);
  return fresh;
}

const CrashGroups::Group* CrashGroups::find(const Signature& signature) const {
  const auto it = index_.find(signature.key());
  return it == index_.end() ? nullptr : &groups_[it->second];
}

std::string CrashGroups::report() const {
  std::vector<const Group*> order;
  for (const Group& g : groups_) order.push_back(&g);
  std::stable_sort(order.begin(), order.end(),
                   [](const Group* a, const Group* b) { return a->count > b->count; });
  std::ostringstream os;
  os << crashes_ << " crashing programs, " << groups_.size() << " signatures\n";
  for (const Group* g : order) {
    os << "  " << g->count << " x " << crash_kind_name(g->signature.kind) << ": "
       << g->signature.headline << "\n";
    for (const std::string& f : g->signature.frames) os << "      at " << f << "\n";
    os << "    first: " << g->first_id << "; examples:";
    for (const std::string& e : g->examples) os << " " << e;
    os << "\n";
  }
  return os.str();
}

std::string crash_log_entry(const Signature& signature, const std::string& id,
                            const std::string& program_text) {
  return "crash " + id + "\nsignature " + signature.key() + "\n" + program_text + "end\n";
}

Signature signature_of_key(const std::string& key) {
  Signature sig;
  for (const CrashKind k :
       {CrashKind::kSignal, CrashKind::kAbort, CrashKind::kInternalAssert, CrashKind::kHang}) {
    const std::string prefix = std::string(crash_kind_name(k)) + ": ";
    if (starts_with(key, prefix.c_str())) {
      sig.kind = k;
      sig.headline = key.substr(prefix.size());
      return sig;
    }
  }
  throw std::runtime_error("not a crash signature: " + key);
}

namespace {

// Calls add(signature, id, program) for each entry of a crash log.
template <typename Add>
void parse_crash_log(const std::string& text, const Add& add) {
  std::string id, key, program;
  bool in_entry = false;
  for (const std::string& line : lines_of(text)) {
    if (starts_with(line, "crash ")) {
      if (in_entry) throw std::runtime_error("crash log: no end for " + id);
      id = line.substr(6);
      key.clear();
      program.clear();
      in_entry = true;
    } else if (!in_entry) {
      if (!trim(line).empty()) throw std::runtime_error("crash log: text outside an entry");
    } else if (key.empty() && starts_with(line, "signature ")) {
      key = line.substr(10);
    } else if (line == "end") {
      if (key.empty()) throw std::runtime_error("crash log: no signature for " + id);
      add(signature_of_key(key), id, program);
      in_entry = false;
    } else {
      program += line + "\n";
    }
  }
  if (in_entry) throw std::runtime_error("crash log: no end for " + id);
}

}  // namespace

CrashGroups read_crash_log(const std::string& text) {
  CrashGroups groups;
  parse_crash_log(text, [&](const Signature& sig, const std::string& id, const std::string& p) {
    groups.add(sig, id, p);
  });
  return groups;
}

std::vector<std::pair<std::string, std::string>> read_crash_log_entries(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  parse_crash_log(text, [&](const Signature&, const std::string& id, const std::string& p) {
    out.emplace_back(id, p);
  });
  return out;
}

}  // namespace ag::proptests
