#include "ops/backend.h"

#include <array>
#include <utility>
#include <vector>

#include "engine/memory/allocator.h"
#include "ops/strided_loop.h"
#include "ops/views.h"

namespace ag::ops {

Tensor copy_of(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
  backend_for(t.device()).copy(out, t);
  return out;
}

Tensor Backend::dense(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
  const Shape strides = t.strides();
  strided_copy(t, std::vector<int64_t>(strides.begin(), strides.end()), out);
  return out;
}

Tensor Backend::gemm_operand(const Tensor& t, bool* transpose) {
  if (t.is_contiguous() || t.dim() < 2) return dense(t);
  const Layout swapped = transpose_layout(layout_of(t), t.dim() - 2, t.dim() - 1);
  if (!is_contiguous(swapped)) return dense(t);
  *transpose = !*transpose;
  return t.alias_with_layout(swapped.sizes, swapped.strides, swapped.offset);
}

void Backend::scatter(const Tensor& dst, const Layout& at, const Tensor& src, bool accumulate) {
  const int64_t extent = storage_extent(at) + at.offset;
  if (extent == 0 || src.numel() == 0) return;
  Allocator& allocator = allocator_for(dst.device().type);
  dispatch_dtype(dst.dtype(), [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> target(static_cast<size_t>(extent)), values(static_cast<size_t>(src.numel()));
    allocator.copy_to_host(target.data(), dst.raw_data(), target.size() * sizeof(T));
    allocator.copy_to_host(values.data(), dense(src).raw_data(), values.size() * sizeof(T));
    std::array<std::vector<int64_t>, 1> strides = {
        std::vector<int64_t>(at.strides.begin(), at.strides.end())};
    int64_t i = 0;
    for_each_run<1>(at.sizes, strides, [&](auto off, int64_t n, auto inc) {
      T* p = target.data() + at.offset + off[0];
      for (int64_t k = 0; k < n; ++k, ++i) {
        p[k * inc[0]] = accumulate ? p[k * inc[0]] + values[i] : values[i];
      }
    });
    allocator.copy_from_host(dst.raw_data(), target.data(), target.size() * sizeof(T));
  });
}

Tensor Backend::broadcast_to(const Tensor& a, const Shape& shape) {
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  copy(out, a);
  return out;
}

Tensor Backend::scaled_product(const Tensor& a, const Tensor& b, const Tensor& c, double scale) {
  Tensor scaled = unary(UnaryKind::kMulScalar, b, scale);
  Tensor bc = binary(BinaryKind::kMul, scaled, c, c.shape());
  return binary(BinaryKind::kMul, a, bc, a.shape());
}

void Backend::sum_into_binary(const Tensor& sum, BinaryKind kind, const Tensor& a,
                              const Tensor& b) {
  binary_inplace(BinaryKind::kAdd, sum, binary(kind, a, b, sum.shape()));
}

void Backend::sum_into_scaled_product(const Tensor& sum, const Tensor& a, const Tensor& b,
                                      const Tensor& c, double scale) {
  binary_inplace(BinaryKind::kAdd, sum, scaled_product(a, b, c, scale));
}

}  // namespace ag::ops
