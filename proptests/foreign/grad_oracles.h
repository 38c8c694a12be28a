#pragma once

// Note [Independent answers for a grad() result]
// The verdict on a value disagreement (Note [Verdicts]) needs answers that share code with neither
// engine's reverse mode. For a result of a grad() statement, d(sum_k <g_k, o_k>)/d(input) (outputs
// o_k, grad_outputs g_k, ones where none is given), this file gives central finite differences of
// this engine's forward, run with grad mode off: no backward formula of either engine is used.
// They exist only where the outputs are functions of the input through ops alone: every statement
// the outputs and grad_outputs depend on is a leaf or an op, the input is a leaf, and no in-place
// write comes before the grad() statement (it could change a value of the cone). The point is
// smooth when the one-sided differences agree with the central one (else a kink lies within the
// step, and the verdict is undecided). The API model's dual numbers need its own programs
// (proptests/api_model/program.h) and are not wired here.

#include <cstddef>
#include <optional>
#include <vector>

#include "proptests/conformance/comparison.h"
#include "proptests/conformance/program.h"
#include "proptests/foreign/verdict.h"

namespace ag::proptests {

// Finite differences for result `which` of grad statement `index`; available = false when the
// statement is not a grad() or its outputs are not functions of the input through ops alone.
FiniteDifferenceAnswer grad_finite_differences(const ConformanceProgram& program, size_t index,
                                               size_t which, double step = 1e-6);

// Whether a statement before `index` that the grad statement's outputs depend on draws random
// numbers (dropout with p > 0).
bool depends_on_random_op(const ConformanceProgram& program, size_t index);

// The verdict's input for a disputed grad() result: both engines' values, the finite
// differences, the random-op and NaN flags.
VerdictInput grad_verdict_input(const ConformanceProgram& program, size_t index, size_t which,
                                std::vector<double> ours, std::vector<double> pytorch,
                                double step = 1e-6);

// The verdict on a mismatch of the records (comparison.h) when it is the values of a grad()
// result ("s4 v7 [3] rg=0 leaf=1 = 0.5 ..." against PyTorch's line for it, `expected`); nothing
// for any other mismatch.
std::optional<Verdict> grad_value_verdict(const ConformanceProgram& program,
                                          const Mismatch& mismatch);

}  // namespace ag::proptests
