// The engine-overhead workloads' rounds (seed 000's tiny graph and scalar chain): ours with
// pruning off and on, PyTorch from Python and libtorch's C++ API, in interleaved rounds under
// every measuring condition, the quiet ones pinned to one CPU (Note [One CPU for single-threaded
// rounds], paper/harness/affinity.h). Seed 000's overhead table and issue 45's "nothing may cost"
// rows both measure through this.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/options.h"
#include "paper/workloads/sections.h"

namespace ag::paper {

// Pruning by topological number and by reachability, both off or both on.
EngineOptions pruning(bool on);

// "libtorch 2.15.0 (C++)", "PyTorch 2.15.0 (Python)": a peer's column; `language` is "Python" or
// "C++".
std::string peer_name(const PeerProcess* peer, const char* language);

// The rounds' spread of the C++ peer's time over ours (pruning on), paired by round: the metrics
// of its first and third quartiles, quiet (plain) and under each condition (" [condition]").
inline const std::string kBelowFirstQuartile = "times ours per round, first quartile";
inline const std::string kBelowThirdQuartile = "times ours per round, third quartile";

// One overhead workload's contenders: ours (pruning on; off too when asked), then the peers.
struct OverheadWorkload {
  std::string workload, unit;
  double scale;  // seconds -> unit
  std::function<double(const EngineOptions&)> ours;
  std::vector<std::string> peer_task;
  bool pruning_off_too = true;  // quiet rounds also time ours with pruning off
  bool python_peer = true;      // PyTorch from Python too, not only libtorch
};

// Measures `w` under every condition (busy ones: ours with pruning on and the peers) and adds
// "time per call [condition]" figures, plus the plain "time per call" of the quiet condition.
// Returns how the quiet rounds were placed (Note [One CPU for single-threaded rounds]).
std::string measure_overhead(const Context& context, const OverheadWorkload& w, int rounds);

}  // namespace ag::paper
