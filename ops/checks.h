#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace ag::ops {

// Argument checks shared by the ops; each throws ag::Error naming the op and the tensors.
[[noreturn]] void fail_undefined(const char* op, const char* what);
inline void check_defined(const char* op, const Tensor& t, const char* what) {
  if (!t.defined()) fail_undefined(op, what);
}
// Throws the error for a and b (undefined, or differing in dtype or device).
[[noreturn]] void fail_same_dtype_and_device(const char* op, const Tensor& a, const Tensor& b);
inline void check_same_dtype_and_device(const char* op, const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.dtype() != b.dtype() || a.device() != b.device()) {
    fail_same_dtype_and_device(op, a, b);
  }
}
Shape broadcast_shapes(const char* op, const Tensor& a, const Tensor& b);
// Checks that `from` broadcasts to `to` (what sum_to and broadcast_to need).
void check_broadcastable_to(const char* op, const Shape& from, const Shape& to);
// A dim in [-ndim, ndim) as a non-negative index.
int64_t normalize_dim(const char* op, int64_t dim, const Tensor& t);

}  // namespace ag::ops
