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
// Note [Dims of a 0-dim tensor]
// PyTorch wraps the dim of a 0-dim tensor as if the tensor had one dimension (maybe_wrap_dim
// with a minimum of one dim): for every dim-taking op, dims 0 and -1 are valid and any other
// raises. The op then treats the one element as a [1] tensor along that dim, and the result is
// 0-dim again: sum/mean over it keep the value, transpose is the identity, log_softmax gives 0.
// normalize_dim does the wrapping for every op; the ops run their kernels on the [1] alias of a
// 0-dim input (at_least_1d) and give the result the 0-dim shape back.

// A dim in [-ndim, ndim) as a non-negative index (in [-1, 0] for a 0-dim tensor).
int64_t normalize_dim(const char* op, int64_t dim, const Tensor& t);
// A 0-dim tensor as a [1] tensor sharing its storage (what a kernel taking a dim needs); any
// other tensor as it is.
inline Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? t.alias_with_shape({1}) : t; }

}  // namespace ag::ops
