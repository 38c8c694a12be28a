#pragma once

// Shrinks a program while a predicate holds (e.g. "it still mismatches the same way"): drops
// one statement at a time, with every later statement that reads what it made, and renumbers
// the values. For minimal repros of mismatches found in the corpus or by --check.

#include <functional>
#include <string>

#include "proptests/conformance/comparison.h"
#include "proptests/conformance/foreign_engine.h"
#include "proptests/conformance/program.h"

namespace ag::proptests {

ConformanceProgram reduce(const ConformanceProgram& program,
                          const std::function<bool(const ConformanceProgram&)>& keeps);

// The program without statement `index` and the statements that depend on it, values
// renumbered densely.
ConformanceProgram without(const ConformanceProgram& program, size_t index);

// The program's records on both engines (this engine's run limited to 10 s: a hang is a
// mismatch) and how they compare, in the foreign engine's running process.
Comparison compare_engines(const ConformanceProgram& program, ForeignEngine& foreign);

// The same for `script`, the program in the foreign engine's language, but a disagreement is
// checked in a fresh process of the foreign engine (ForeignEngine::run_fresh: PyTorch's own
// memory-safety bugs can corrupt a long-lived process before it crashes), whose records are
// kept then. For the fuzz driver and export; the reducer, which runs many candidates, does not.
struct BothEngines {
  Records expected;  // the foreign engine's records (the fresh process's, where it ran)
  Comparison comparison;
  bool cleared_by_fresh_process = false;  // the first run disagreed, the fresh one did not
};
BothEngines run_both_engines(const ConformanceProgram& program, ForeignEngine& foreign,
                             const std::string& script);

// The smallest program (by dropping statements) that mismatches `foreign` in the same class
// (triage.h) as `program` does; `program` itself if it agrees.
ConformanceProgram reduce_mismatch(const ConformanceProgram& program, ForeignEngine& foreign);

}  // namespace ag::proptests
