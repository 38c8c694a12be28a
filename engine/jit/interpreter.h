// Runs a graph on RtValues, op by op, in node order. A
// prim::DifferentiableGraph runs its subgraph on the very same input values,
// so views and in-place ops inside and outside groups see the same storage.
// prim::Print appends the text of its input (shape and values) to `log`.
#pragma once

#include <string>
#include <vector>

#include "engine/jit/ir.h"
#include "engine/jit/runtime_value.h"

namespace ag::jit {

using PrintLog = std::vector<std::string>;

// Throws RuntimeError when an op fails (shapes, indices) and IrError when the
// inputs do not match the graph's signature.
std::vector<RtValue> runGraph(const Graph& graph, const std::vector<RtValue>& inputs, PrintLog* log = nullptr);

}  // namespace ag::jit
