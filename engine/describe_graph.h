#pragma once

#include <string>

#include "engine/options.h"
#include "engine/tensor.h"

namespace ag {

// The autograd graph behind `outputs`, for reading and for debugging: every node reachable from
// them, newest first (the order backward runs them), with its sequence and topological numbers,
// the values it keeps for backward (with their bytes), its hooks, where its edges go, and what a
// grad(outputs, inputs) call with `options` would do with it: run it, capture a requested input
// there, expand it without running it, or cut it; and so which of its hooks would run (Note
// [Hooks], engine/hooks.h). With no inputs, as backward() would.
//
//   #7 mul  topo 2  runs  saved: self float64[3] 24 B, other float64[3] 24 B  hooks: 1 pre (would
//   run)
//      -> #5 AccumulateGrad [0]  not computed
//      -> #6 tanh [0]
// ("not computed": the node runs but this call does not need that input's gradient, so with
// per-call needs_input_grad its formula is skipped. Hooks: "(tensor hooks would run)" on a node
// that only captures, whose tensor and retains-grad hooks run but not its node hooks.)
std::string describe_graph(const TensorList& outputs, const TensorList& inputs = {},
                           const EngineOptions& options = current_options());
inline std::string describe_graph(const Tensor& output) {
  return describe_graph(TensorList{output});
}

// The same graph in Graphviz's DOT language (`dot -Tpng`): nodes that run are filled, requested
// inputs have a bold outline, cut nodes are dashed, edges whose gradient is not computed dotted.
std::string describe_graph_dot(const TensorList& outputs, const TensorList& inputs = {},
                               const EngineOptions& options = current_options());

}  // namespace ag
