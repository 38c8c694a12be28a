// Note [Kernels run in the output's order] (ops/in_layout.h).
#include "ops/in_layout.h"

#include <algorithm>
#include <numeric>

#include "ops/strided_loop.h"
#include "ops/views.h"

namespace ag::ops {

std::vector<int64_t> outer_to_inner(const Shape& strides) {
  std::vector<int64_t> order(strides.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  // Stable: dims of equal stride (only dims of size 1 can tie) keep their order.
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  return order;
}

Tensor permuted_operand(const Tensor& t, const Shape& shape, const std::vector<int64_t>& order) {
  const Shape strides = broadcast_strides(t.shape(), t.strides(), shape);
  Shape sizes(order.size()), permuted(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    sizes[k] = shape[order[k]];
    permuted[k] = strides[order[k]];
  }
  return t.alias_with_layout(sizes, permuted, t.storage_offset());
}

namespace {

// An operand's stride at the output's dim d (TensorIterator::compute_strides): 0 where it
// broadcasts (a missing dim, or one of size 1 where the output's is not).
int64_t iteration_stride(const Tensor& t, const Shape& shape, size_t d) {
  const size_t lead = shape.size() - static_cast<size_t>(t.dim());
  if (d < lead) return 0;
  const int64_t i = static_cast<int64_t>(d - lead);
  return t.shape()[i] == 1 && shape[d] != 1 ? 0 : t.stride(i);
}

// Rule 1 (TensorIterator's fast set-up) decides only for operands of one shape none of which
// broadcasts a dim: a stride 0 over a dim of size > 1 is neither dense nor channels-last.
bool rule_one_cannot_apply(const Shape& shape, std::initializer_list<const Tensor*> operands,
                           bool scalar) {
  if (scalar && !shape.empty()) return true;  // the wrapped scalar is 0-d
  for (const Tensor* t : operands) {
    if (t->shape() != shape) return true;
    for (int64_t i = 0; i < t->dim(); ++i) {
      if (shape[i] > 1 && t->stride(i) == 0) return true;
    }
  }
  return false;
}

}  // namespace

bool strided_operands_give_contiguous_output(const Shape& shape,
                                             std::initializer_list<const Tensor*> operands,
                                             bool scalar) {
  if (numel(shape) == 0) return true;
  if (!rule_one_cannot_apply(shape, operands, scalar)) return false;
  const IterationStrides strides{operands.size(), [&](size_t k, size_t d) {
                                   return iteration_stride(*operands.begin()[k], shape, d);
                                 }};
  return rule_two_keeps_row_major(shape, strides);
}

Shape output_strides(const Shape& shape, std::initializer_list<const Tensor*> operands,
                     bool scalar) {
  std::vector<Layout> layouts;
  layouts.reserve(operands.size() + 1);
  for (const Tensor* t : operands) layouts.push_back(Layout{t->shape(), t->strides(), 0});
  if (scalar) layouts.push_back(Layout{});
  return elementwise_output_strides(shape, layouts);
}

}  // namespace ag::ops
