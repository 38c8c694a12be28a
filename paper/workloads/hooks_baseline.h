// Issue 45's "nothing may cost" rows: with no hooks registered, the engine as shipped against the
// peers of the no-hook workloads, under every measuring condition: seed 000's tiny graph
// grad(a*b) and 1000-mul chain against libtorch's C++ API (issue 17's target: at least 15x below
// it), through the overhead section's rounds (overhead_rounds.h); seed 001's CPU hessian step, its
// four variants (ReLU and Tanh, without and with the final backward), against PyTorch's autograd
// (at most 0.8x its time).
#pragma once

#include <sstream>
#include <string>

#include "paper/workloads/sections.h"

namespace ag::paper {

// "met (0.41x)", or "missed by 12% (0.9x)": a ratio against a target it must not exceed.
std::string verdict_at_most(double ratio_value, double target);

// Measures the rows (quiet `rounds`, `busy_rounds` under each load, steps in stretches of
// `stretch` seconds where the workload takes them) and appends their table to `s`.
void no_hooks_rows(const Context& context, int rounds, int busy_rounds, double stretch,
                   std::ostringstream& s);

}  // namespace ag::paper
