// Forward kernels over RtTensor for the interpreter. Views share storage with
// their base; in-place ops write through the strides of `self`.
#pragma once

#include <functional>

#include "engine/jit/runtime_value.h"

namespace ag::jit::rt {

Shape broadcastShapes(const char* op, const Shape& a, const Shape& b);

RtTensor unary(const RtTensor& x, const std::function<double(double)>& f);
RtTensor binary(const char* op, const RtTensor& a, const RtTensor& b, const std::function<double(double, double)>& f);
// self = f(self, other), broadcasting `other` to self's shape.
void binaryInPlace(const char* op, RtTensor& self, const RtTensor& other,
                   const std::function<double(double, double)>& f);
RtTensor sum(const RtTensor& x);

RtTensor transpose(const RtTensor& x, int64_t dim0, int64_t dim1);
// A view when `x` is contiguous, a copy otherwise (like torch.reshape).
RtTensor reshape(const RtTensor& x, const Shape& shape);
RtTensor select(const RtTensor& x, int64_t dim, int64_t index);
RtTensor cat(const RtList& xs, int64_t dim);

}  // namespace ag::jit::rt
