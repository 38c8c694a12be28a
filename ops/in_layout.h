#pragma once

// Note [Kernels run in the output's order]
// How an op gives its output the strides of Note [Output layout of elementwise ops]
// (ops/output_layout.h) with kernels that write fresh contiguous tensors: the operands (expanded
// to the output's shape) are permuted, as aliases, so that the output's dims run outermost
// first; the kernel writes a contiguous tensor of that permuted shape, which, read back in the
// output's dim order, has exactly the wanted strides. As TensorIterator's own reordering, an
// operand in the output's order (a transpose times 2) is then contiguous and takes the flat
// kernels. Ops call this only when some operand is not contiguous: contiguous operands give a
// contiguous output, with no work here.

#include <vector>

#include "engine/tensor.h"
#include "ops/output_layout.h"

namespace ag::ops {

// The dims of a layout with `strides`, outermost (largest stride) first.
std::vector<int64_t> outer_to_inner(const Shape& strides);
// `t` broadcast to `shape` and then permuted by `order` (an alias; no autograd).
Tensor permuted_operand(const Tensor& t, const Shape& shape, const std::vector<int64_t>& order);
// The output's layout from its operands' (ops/output_layout.h); `scalar` adds PyTorch's wrapped
// Python scalar (a 0-d operand) after them.
Shape output_strides(const Shape& shape, std::initializer_list<const Tensor*> operands,
                     bool scalar = false);

// Whether the output's layout is contiguous, so that a kernel writing a fresh contiguous tensor
// gives it directly: contiguous operands, or Note [Output layout of elementwise ops]'s rule 2
// with the dims in row-major order (a broadcast gradient times a scalar), told without
// allocating. False where it is not, or not told: output_strides() then computes it.
// Operands with row-major strides, the common case, are told inline, in a few instructions a
// call. A contiguous operand whose size-1 dims have other strides (Note [Strided tensors]) is not
// told inline: TensorIterator reads those strides where the operands broadcast.
bool strided_operands_give_contiguous_output(const Shape& shape,
                                             std::initializer_list<const Tensor*> operands,
                                             bool scalar);
inline bool contiguous_output(const Shape& shape, std::initializer_list<const Tensor*> operands,
                              bool scalar = false) {
  for (const Tensor* t : operands) {
    if (!t->has_row_major_strides())
      return strided_operands_give_contiguous_output(shape, operands, scalar);
  }
  return true;
}

// kernel(operands...) in the order of `strides`: kernel gets the operands, each broadcast to
// `shape` and permuted, and returns a new contiguous tensor of their shape; the result has
// `shape` and `strides`.
template <typename Kernel, typename... Operands>
Tensor run_in_layout(const Shape& shape, const Shape& strides, const Kernel& kernel,
                     const Operands&... operands) {
  const std::vector<int64_t> order = outer_to_inner(strides);
  const Tensor out = kernel(permuted_operand(operands, shape, order)...);
  return out.alias_with_layout(shape, strides, 0);
}

}  // namespace ag::ops
