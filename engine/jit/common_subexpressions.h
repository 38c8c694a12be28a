// Note [Common subexpressions]
// A graph traced with its gradients can compute one value twice. On seed 001's step, the second
// grad pushes ones through the first grad's products (ones_like(y_x) @ W1^T, tanh_backward,
// @ W2^T, ...), and the final backward, whose seed is the same ones (sum's derivative,
// broadcast_to(ones_like(sum))), pushes them through the very same ops again: five large products
// and their elementwise ops, computed twice. (XLA's CSE finds the same repetition in JAX's
// jvp(grad) step.)
//
// eliminateCommonSubexpressions() walks the graph in order and, where a node computes a value an
// earlier node already computed, points the later node's readers at the earlier one and removes
// it. Two nodes compute the same value when
//  - they are the same op with the same attributes on the same input values (PyTorch's
//    EliminateCommonSubexpression), every op of the set being a function of its inputs and
//    attributes (dropout's mask is drawn from its seed, an attribute); or
//  - both are fills: ones_like and zeros_like make a tensor of one value of their input's shape,
//    dtype and device, whatever the input holds, and a view of a fill (an op whose spec's alias
//    kind makes its result a view of its input: broadcast_to, sum's expanded gradient, expand,
//    reshape...) is a fill of the view's shape. Fills of the same value, shape, dtype and device
//    hold the same elements. Merging a view with a fill changes what shares storage, which only
//    a write could observe: graphs with in-place ops are left alone, and outputs are fresh.
// Merged values hold the same bits, so the graph's results do not change.
//
// What it leaves alone: graphs with in-place ops or groups (a write would make two equal values
// differ, as for Note [Structural zeros]), ops with side effects, the IR's list ops, and two nodes
// whose results are both graph outputs (a call returns a fresh tensor per output, as PyTorch's
// pass keeps outputs from aliasing).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/jit/ir.h"
#include "engine/node.h"

namespace ag::jit {

// `metas` gives each value's shape, dtype and device by value id (TracingScope::finish); fills
// are recognized only where it knows the result's. Returns the number of nodes removed; 0 for a
// graph with in-place ops or groups.
int64_t eliminateCommonSubexpressions(Graph& graph,
                                      const std::vector<std::optional<TensorMeta>>& metas);

}  // namespace ag::jit
