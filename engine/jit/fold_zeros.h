// Note [Structural zeros]
// A graph traced with its gradients (Note [Tracing gradients], tracer.h) holds every formula the
// engine ran, including those whose result is zero whatever the values: relu's derivative
// threshold_backward(grad, result) has derivative zeros_like(grad) with respect to `result`
// (relu is piecewise linear), and PyTorch, and the engine, keep that edge so that
// grad(grad(y, x), x) on a ReLU network returns zeros through the graph instead of failing. The
// zero then flows on as ordinary tensors: mm(zeros, W), threshold_backward(zeros, h), sums of
// zeros, each a full kernel over a tensor of zeros.
//
// foldStructuralZeros() knows, as JAX's symbolic zeros do, that such a value is zero by
// construction: a value is a structural zero if it is zeros_like's result, a constant whose
// elements are all zero, or the result of an op that is linear in an operand that is one (mul,
// div's numerator, mm, bmm, matmul, linear without a bias, the activations' backward in their
// gradient, neg, the scalar product, sums, means, shape changes and copies), or a sum or
// difference of two of them (add, sub, addmm and linear whose every term is one). Each such
// value's uses read a constant of zeros of its shape instead (a graph output gets a fresh
// zeros_like of it per run), and eliminateDeadCode() then drops every node nothing reads any
// more: on the ReLU hessian, everything but the zeros of the result (paper/results, seed 001).
//
// The one difference from running the ops: an op linear in a zero operand gives zero even where
// another operand is infinite or NaN (0 * inf is NaN), as under JAX's symbolic zeros, and zero
// where the op could give -0. Graphs with in-place ops are left as they are: a write to a zero
// (or to what shares its memory) would make it not zero any more.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/jit/ir.h"
#include "engine/node.h"

namespace ag::jit {

// `metas` gives each value's shape, dtype and device by value id (TracingScope::finish). Returns
// the number of values folded; 0 for a graph with in-place ops or groups.
int64_t foldStructuralZeros(Graph& graph, const std::vector<std::optional<TensorMeta>>& metas);

// Whether the node may write a tensor in place: an in-place op, or a group (which may hold one).
// Passes that take equal values to stay equal (this one, Note [Common subexpressions]) leave a
// graph with such a node as it is.
bool writesInPlace(const Node& n);
bool writesInPlace(const Graph& graph);  // some node of the graph does

// Removes every node without side effects (no in-place op, no print) whose outputs nothing reads,
// in one walk from the end. Returns the number of nodes removed.
int64_t eliminateDeadCode(Graph& graph);

}  // namespace ag::jit
