#pragma once

// A reduced conformance program as a standalone PyTorch script: `import torch` and one line per
// statement, no project helpers, for a bug report. Unlike torch_script.cc, which spells the
// engine's semantics where they deviate (DEVIATIONS.md), this is what a PyTorch user writes:
//   leaves         torch.tensor of the program's values (the engine's counter-based generator),
//                  or torch.rand when the values do not matter (LeafValues::kRandom);
//   scalar ops     torch.ops.aten.add.Scalar / mul.Scalar, as the fuzzed script calls them;
//   shape ops      torch.transpose, torch.broadcast_to (views, as the engine's);
//                  sum_to: Tensor.sum_to_size;
//   in-place ops   Tensor.add_/mul_/copy_ of the operand itself (no overlap copy);
//   grad/backward  torch.autograd.grad/backward with the defaults left out;
//   custom         the Function's class (Mul, Two, Split), defined once before its first use,
//                  with PyTorch's own ctx.needs_input_grad.
// Unsupported: dropout and dropout2d with p > 0 (their masks are the engine's; a plain spelling
// draws other ones). render_standalone throws StandaloneError naming the statement kind.
// The crash it reproduces must be confirmed by running this script itself (the live part).

#include <set>
#include <stdexcept>
#include <string>

#include "proptests/conformance/program.h"

namespace ag::proptests {

struct StandaloneError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class LeafValues { kExact, kRandom };

// How the custom Functions are defined: kFull as above; kCompact in three lines each (forward and
// backward as lambdas, gradients for every input, without ctx.needs_input_grad), for a report's
// line budget. A crash must be confirmed with the style the report carries.
enum class FunctionStyle { kFull, kCompact };

struct StandaloneOptions {
  LeafValues leaves = LeafValues::kExact;
  FunctionStyle functions = FunctionStyle::kFull;
  // Statements (indices) that raised where the program was recorded: each runs inside
  // try/except RuntimeError, so that the script reaches what comes after.
  std::set<size_t> raising;
  // Values printed at the end (for a wrong value rather than a crash).
  std::vector<int> print;
};

// The lines of a script that are not `import torch`, blank or a comment: a report's budget.
int script_lines(const std::string& script);

// Throws StandaloneError for a statement it cannot spell.
std::string render_standalone(const ConformanceProgram& program,
                              const StandaloneOptions& options = {});

}  // namespace ag::proptests
