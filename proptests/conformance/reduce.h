#pragma once

// Shrinks a program while a predicate holds (e.g. "it still mismatches the same way"): drops
// one statement at a time, with every later statement that reads what it made, and renumbers
// the values. For minimal repros of mismatches found in the corpus or by --check.

#include <functional>

#include "proptests/conformance/program.h"

namespace ag::conformance {

Program reduce(const Program& program, const std::function<bool(const Program&)>& keeps);

// The program without statement `index` and the statements that depend on it, values
// renumbered densely.
Program without(const Program& program, size_t index);

}  // namespace ag::conformance
