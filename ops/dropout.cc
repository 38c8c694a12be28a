// Dropout as a mask multiply: the mask is a constant, so mul's guarded saves keep it only when
// the input requires grad, and never keep the input (Note [Guarded saves]).
#include "engine/error.h"
#include "ops/backend.h"
#include "ops/checks.h"
#include "ops/ops.h"

namespace ag::ops {
namespace {

Tensor masked(const char* op, const Tensor& a, const Shape& mask_shape, double p, bool train,
              uint64_t seed) {
  check_defined(op, a, "input");
  AG_CHECK(p >= 0.0 && p <= 1.0, op, ": probability p must be in [0, 1], got ", p);
  if (!train || p == 0.0) return a;
  if (p == 1.0) return mul(a, zeros(mask_shape, a.dtype(), a.device()));
  Tensor mask =
      backend_for(a.device()).dropout_mask(mask_shape, 1.0 - p, seed, a.dtype(), a.device());
  return mul(a, mask);
}

}  // namespace

Tensor dropout(const Tensor& a, double p, bool train, uint64_t seed) {
  return masked("dropout", a, a.defined() ? a.shape() : Shape{}, p, train, seed);
}

Tensor dropout2d(const Tensor& a, double p, bool train, uint64_t seed) {
  check_defined("dropout2d", a, "input");
  AG_CHECK(a.dim() >= 2, "dropout2d: expected a [N, C, ...] tensor, got ", a.describe());
  Shape mask_shape(a.shape().size(), 1);
  mask_shape[0] = a.shape()[0];
  mask_shape[1] = a.shape()[1];
  return masked("dropout2d", a, mask_shape, p, train, seed);
}

}  // namespace ag::ops
