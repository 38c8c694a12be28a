// The timed variants of a workload (ours, or a peer's task) in interleaved rounds under one
// measuring condition, each variant's median added to the run's results: the measuring loop of the
// sections that compare a few variants per table (issues 45 and 46).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "paper/harness/interleave.h"
#include "paper/workloads/sections.h"

namespace ag::paper {

inline const std::string kStepTime = "step time";
inline const std::string kFirstQuartile = "per round, first quartile";
inline const std::string kThirdQuartile = "per round, third quartile";

// "step time [busy: spin]".
std::string metric_under(const std::string& metric, const Condition& condition);

// One timed variant: ours, or a peer's whole task (seconds per step).
struct Variant {
  std::string workload, name;
  std::function<double()> ours;  // one step, returning a checksum; empty for a peer's
  PeerProcess* peer = nullptr;
  std::vector<std::string> task;  // the peer's task
};

// Every variant in interleaved rounds under `condition`, at the run's thread count (ours in
// stretches of `stretch` seconds, Note [A stretch of steps]); adds each median (ms) as kStepTime
// [condition] (and plain kStepTime when quiet), prints them, and returns the rounds.
Rounds measure_variants(const Context& context, const std::vector<Variant>& variants,
                        const Condition& condition, int rounds, double stretch);

// Adds the middle half of variant a's time over variant b's, round by round, as kFirstQuartile and
// kThirdQuartile [condition] of workload's `variant` row.
void add_middle_half(const Context& context, const Rounds& rounds, size_t a, size_t b,
                     const std::string& workload, const std::string& variant,
                     const Condition& condition);

// Read back for a report: what measure_variants added for a variant under `condition` (ms), and
// the middle half that add_middle_half added for a row ("0.05x - 0.07x").
double step_ms(const Results& results, const std::string& workload, const std::string& variant,
               const Condition& condition);
std::string middle_half(const Results& results, const std::string& workload,
                        const std::string& variant, const Condition& condition);

}  // namespace ag::paper
