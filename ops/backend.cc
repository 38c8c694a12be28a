#include "ops/backend.h"

#include <utility>

#include "ops/strided_loop.h"

namespace ag::ops {

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

Tensor Backend::transpose(const Tensor& a, int64_t dim0, int64_t dim1) {
  Shape shape = a.shape();
  std::swap(shape[dim0], shape[dim1]);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  std::vector<int64_t> strides = contiguous_strides(a.shape());
  std::swap(strides[dim0], strides[dim1]);
  strided_copy(a, strides, out);
  return out;
}

}  // namespace ag::ops
