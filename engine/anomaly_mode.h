#pragma once

// Anomaly mode: backward errors that name the forward call behind the failing node, and NaN
// gradients caught at the formula that made them (Note [Anomaly mode]).

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace ag {

class Node;

// Note [Anomaly mode]
// As torch.autograd.detect_anomaly(check_nan) in PyTorch 2.15. While a DetectAnomaly scope is
// open (the switch is process-wide, as PyTorch's), every node recorded remembers the forward call
// that made it: the native frames of the call (backtrace(3)), symbolized when an error needs them,
// as far as the binary's symbol table allows (names need -rdynamic; otherwise a module and an
// offset for addr2line). During a backward pass:
// - an error raised while a node runs (its formulas, the saved values it unpacks, its hooks) is
//   raised again with the original message followed by "Error detected in '<node>'" and that
//   forward call, as PyTorch prints it beside the error;
// - with check_nan, a node whose apply returns a NaN in a gradient raises "Function '<node>'
//   returned nan values in its <i>th output." (PyTorch's words). So that every formula's value is
//   seen, no formula adds its value into a waiting sum while the check is on (Note [Sums fused
//   into formulas], engine/engine.cc).
// The engine loop calls one function (call_watching_anomalies) when the switch is on, and nothing
// else changes: with the switch off, the cost is one relaxed load per recorded node and per node
// run.
class DetectAnomaly {
 public:
  explicit DetectAnomaly(bool check_nan = true);
  ~DetectAnomaly();
  DetectAnomaly(const DetectAnomaly&) = delete;
  DetectAnomaly& operator=(const DetectAnomaly&) = delete;

 private:
  int previous_;
};

namespace detail {
// 0: off; 1: on; 2: on, checking NaNs.
inline std::atomic<int> anomaly_mode{0};
}  // namespace detail

inline bool anomaly_mode_enabled() {
  return detail::anomaly_mode.load(std::memory_order_relaxed) != 0;
}
inline bool anomaly_mode_checks_nan() {
  return detail::anomaly_mode.load(std::memory_order_relaxed) == 2;
}

// The forward call that recorded a node: its native frames.
struct ForwardCall {
  std::vector<void*> frames;
  std::string describe() const;  // one frame per line, symbolized as far as possible
};

// Taken by a node's constructor while anomaly mode is on.
std::unique_ptr<const ForwardCall> record_forward_call();

// Runs `run` (the node's hooks and apply) for `node`, adding the forward call to an error it
// raises and checking its gradients for NaNs (Note [Anomaly mode]).
TensorList call_watching_anomalies(const Node& node, const std::function<TensorList()>& run);

}  // namespace ag
