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

Shape output_strides(const Shape& shape, std::initializer_list<const Tensor*> operands,
                     bool scalar) {
  std::vector<Layout> layouts;
  layouts.reserve(operands.size() + 1);
  for (const Tensor* t : operands) layouts.push_back(Layout{t->shape(), t->strides(), 0});
  if (scalar) layouts.push_back(Layout{});
  return elementwise_output_strides(shape, layouts);
}

}  // namespace ag::ops
