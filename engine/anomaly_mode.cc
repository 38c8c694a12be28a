// Note [Anomaly mode] (engine/anomaly_mode.h).
#include "engine/anomaly_mode.h"

#include <cxxabi.h>
#include <execinfo.h>

#include <cmath>
#include <cstdlib>

#include "engine/error.h"
#include "engine/node.h"

namespace ag {

DetectAnomaly::DetectAnomaly(bool check_nan)
    : previous_(detail::anomaly_mode.exchange(check_nan ? 2 : 1)) {}

DetectAnomaly::~DetectAnomaly() { detail::anomaly_mode.store(previous_); }

std::unique_ptr<const ForwardCall> record_forward_call() {
  constexpr int kMaxFrames = 32;
  auto call = std::make_unique<ForwardCall>();
  call->frames.resize(kMaxFrames);
  const int n = backtrace(call->frames.data(), kMaxFrames);
  // The first frames are this function and the node's constructor.
  constexpr int kOwnFrames = 2;
  call->frames.erase(call->frames.begin() + std::min(n, kMaxFrames), call->frames.end());
  call->frames.erase(call->frames.begin(),
                     call->frames.begin() + std::min<size_t>(kOwnFrames, call->frames.size()));
  return call;
}

namespace {

// "module(mangled+0x1f) [0x...]" with the name demangled, when the symbol table has one.
std::string demangled(const char* line) {
  std::string s = line;
  const size_t open = s.find('('), plus = s.find('+', open);
  if (open == std::string::npos || plus == std::string::npos || plus == open + 1) return s;
  const std::string mangled = s.substr(open + 1, plus - open - 1);
  int status = 0;
  char* name = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || name == nullptr) return s;
  s = s.substr(0, open + 1) + name + s.substr(plus);
  std::free(name);
  return s;
}

bool has_nan(const Tensor& t) {
  if (!t.defined()) return false;
  for (double v : t.to_vector()) {
    if (std::isnan(v)) return true;
  }
  return false;
}

}  // namespace

std::string ForwardCall::describe() const {
  std::string out;
  char** lines = backtrace_symbols(frames.data(), static_cast<int>(frames.size()));
  if (lines == nullptr) return "  (no frames)\n";
  for (size_t i = 0; i < frames.size(); ++i) out += "  " + demangled(lines[i]) + "\n";
  std::free(lines);
  return out;
}

TensorList call_watching_anomalies(const Node& node, const std::function<TensorList()>& run) {
  TensorList outputs;
  try {
    outputs = run();
    if (anomaly_mode_checks_nan()) {
      for (size_t i = 0; i < outputs.size(); ++i) {
        AG_CHECK(!has_nan(outputs[i]), "Function '", node.name(), "' returned nan values in its ",
                 i, "th output.");
      }
    }
  } catch (const Error& e) {
    const ForwardCall* call = node.forward_call();
    throw Error(std::string(e.what()) + "\n\nError detected in '" + node.name() + "'. " +
                (call != nullptr ? "The forward call that created it:\n" + call->describe()
                                 : std::string("It was recorded while anomaly mode was off, so "
                                               "its forward call is unknown.\n")));
  }
  return outputs;
}

}  // namespace ag
