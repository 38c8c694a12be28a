#pragma once

// Note [Output layout of elementwise ops]
// PyTorch's elementwise ops (TensorIterator: unary, binary, with a Python scalar, where, the
// comparisons, clamp, ...) do not always return contiguous tensors: the output takes the stride
// order of the inputs, so that t.t() * 2 is again a transpose (strides (1, 3) for a 3x2 result)
// and (t.t() * 2).view(6) raises as PyTorch's does. The rule, as TensorIterator::build applies it
// (compute_fast_setup_type, then compute_strides and reorder_dimensions):
//  1. when every operand has the output's shape (a 0-d operand, a Python scalar wrapped as a
//     tensor, makes them differ): all contiguous gives a contiguous output; all channels-last
//     (4-D) a channels-last one; all non-overlapping and dense with equal strides those strides;
//  2. otherwise the dims are sorted, innermost first, by insertion sort over the pairs (inner,
//     outer) with PyTorch's should_swap: operand by operand, in order, a pair where either stride
//     is 0 (a broadcast dim) is skipped; a strictly smaller stride goes inner and decides; on
//     equal strides the dim of smaller size goes inner (only a larger inner size swaps, else the
//     next operand is asked); a pair no operand decides keeps its order. The output gets the
//     dense strides of that order. Operands with row-major strides (size-1 dims included)
//     always give the identity order.
// clone() and empty_like() (memory_format=preserve) keep a non-overlapping and dense input's
// strides, else the dense strides of the input's stride order (infer_dense_strides: rule 2 with
// the one operand). An empty output is contiguous here (PyTorch's strides of an empty result are
// not observable through view or reshape, and the engine keeps empty tensors contiguous).
// Checked against PyTorch 2.15 on random layouts (ranks 0-4, permuted, sliced, expanded,
// broadcast): regressions/elementwise_layout_test.cc pins the cases.

#include <functional>
#include <vector>

#include "ops/view_layout.h"

namespace ag::ops {

// The strides of an elementwise op's output of `shape` from its operands' layouts, in
// TensorIterator's operand order (offsets do not matter). A 0-d layout stands for a Python scalar.
Shape elementwise_output_strides(const Shape& shape, const std::vector<Layout>& operands);
// The operands' strides over the output's dims (TensorIterator::compute_strides: 0 where an
// operand broadcasts), read without copying them: at(k, d) is operand k's at dim d.
struct IterationStrides {
  size_t operands;
  std::function<int64_t(size_t k, size_t d)> at;
};
// Whether rule 2 leaves the dims in row-major order, so that the output is contiguous; decided
// without allocating (a stride-0 gradient times a scalar is on every backward of a sum), and
// false above kMaxRowMajorCheckRank dims, where callers compute the strides. Rule 1 is the
// caller's to rule out.
inline constexpr size_t kMaxRowMajorCheckRank = 8;
bool rule_two_keeps_row_major(const Shape& shape, const IterationStrides& strides);
// The dims of `shape` innermost first, in the order rule 2 sorts them (TensorIterator's
// reorder_dimensions over the operands' strides, the output's first).
std::vector<size_t> iteration_order(const Shape& shape, const IterationStrides& strides);
// The strides of clone(in) and empty_like(in) with memory_format=preserve.
Shape preserve_format_strides(const Layout& in);

}  // namespace ag::ops
