#pragma once

// Shrinks a program while a predicate holds (e.g. "it still mismatches the same way"): drops
// one statement at a time, with every later statement that reads what it made, and renumbers
// the values. For minimal repros of mismatches found in the corpus or by --check.

#include <functional>

#include "proptests/conformance/comparison.h"
#include "proptests/conformance/foreign_engine.h"
#include "proptests/conformance/program.h"

namespace ag::conformance {

Program reduce(const Program& program, const std::function<bool(const Program&)>& keeps);

// The program without statement `index` and the statements that depend on it, values
// renumbered densely.
Program without(const Program& program, size_t index);

// The program's records on both engines (this engine's run limited to 10 s: a hang is a
// mismatch) and how they compare.
Comparison compare_engines(const Program& program, ForeignEngine& foreign);

// The smallest program (by dropping statements) that mismatches `foreign` in the same class
// (triage.h) as `program` does; `program` itself if it agrees.
Program reduce_mismatch(const Program& program, ForeignEngine& foreign);

}  // namespace ag::conformance
