#include "ops/checks.h"

#include <algorithm>

#include "engine/error.h"

namespace ag::ops {

void fail_undefined(const char* op, const char* what) {
  fail(op, ": ", what, " is an undefined tensor");
}

void fail_same_dtype_and_device(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a, "first argument");
  check_defined(op, b, "second argument");
  AG_CHECK(a.dtype() == b.dtype(), op, ": expected tensors of the same dtype, got ", a.describe(),
           " and ", b.describe());
  // describe() leaves out "cpu"; a device mismatch names both devices.
  fail(op, ": expected tensors on the same device, got ", to_string(a.dtype()),
       to_string(a.shape()), " on ", to_string(a.device()), " and ", to_string(b.dtype()),
       to_string(b.shape()), " on ", to_string(b.device()));
}

Shape broadcast_shapes(const char* op, const Tensor& a, const Tensor& b) {
  check_same_dtype_and_device(op, a, b);
  const Shape& x = a.shape();
  const Shape& y = b.shape();
  if (x == y) return x;
  Shape out(std::max(x.size(), y.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t dx = i < out.size() - x.size() ? 1 : x[i - (out.size() - x.size())];
    int64_t dy = i < out.size() - y.size() ? 1 : y[i - (out.size() - y.size())];
    AG_CHECK(dx == dy || dx == 1 || dy == 1, op, ": shapes ", to_string(x), " and ", to_string(y),
             " cannot be broadcast together (dimension ", i, ": ", dx, " vs ", dy, ")");
    out[i] = dx == 1 ? dy : dx;
  }
  return out;
}

void check_broadcastable_to(const char* op, const Shape& from, const Shape& to) {
  bool ok = from.size() <= to.size();
  for (size_t i = 0; ok && i < from.size(); ++i) {
    int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    ok = f == t || f == 1;
  }
  AG_CHECK(ok, op, ": shape ", to_string(from), " does not broadcast to ", to_string(to));
}

int64_t normalize_dim(const char* op, int64_t dim, const Tensor& t) {
  const int64_t n = std::max<int64_t>(t.dim(), 1);  // Note [Dims of a 0-dim tensor]
  AG_CHECK(dim >= -n && dim < n, op, ": dim ", dim, " is out of range for a tensor of shape ",
           to_string(t.shape()), " (expected a dim in [", -n, ", ", n - 1, "])");
  return dim < 0 ? dim + n : dim;
}

}  // namespace ag::ops
