#pragma once

// The op set. Each op validates its arguments (errors name the op and the shapes), runs its
// kernel on the tensors' device, and records its derivative spec (Note [Derivative spec]).

#include <cstdint>
#include <vector>

#include "engine/tensor.h"
#include "ops/kinds.h"

namespace ag::ops {

// Factories.
Tensor zeros(const Shape& shape, DType dtype = DType::kFloat32, Device device = kCPU);
Tensor ones(const Shape& shape, DType dtype = DType::kFloat32, Device device = kCPU);
Tensor full(const Shape& shape, double value, DType dtype = DType::kFloat32, Device device = kCPU);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
// A tensor holding `values` (row-major) with the given shape.
Tensor from_vector(const std::vector<double>& values, const Shape& shape,
                   DType dtype = DType::kFloat32, Device device = kCPU);
// Uniform in [low, high), deterministic in seed.
Tensor uniform(const Shape& shape, double low, double high, uint64_t seed,
               DType dtype = DType::kFloat32, Device device = kCPU);
Tensor clone(const Tensor& t);             // a copy with autograd history (like torch.clone)
Tensor contiguous_clone(const Tensor& t);  // clone(memory_format=torch.contiguous_format)
// A clone with `strides`, which must be dense in some order of the dims.
Tensor clone_with_strides(const Tensor& t, const Shape& strides);
Tensor to(const Tensor& t, Device device);  // a copy on another device, differentiable

// Elementwise, with NumPy broadcasting (gradients are summed back to each input's shape).
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& base, const Tensor& exponent);
Tensor add(const Tensor& a, double s);
Tensor mul(const Tensor& a, double s);
Tensor pow(const Tensor& base, double exponent);
// The plain unary ops, one per line of the op list (AG_PLAIN_UNARY_OPS, ops/kinds.h): neg, exp,
// log, tanh, sigmoid, relu, ..., each Tensor name(const Tensor& a).
#define AG_DECLARE_PLAIN_UNARY(Name, name, rule) Tensor name(const Tensor& a);
AG_PLAIN_UNARY_FUNCTIONS(AG_DECLARE_PLAIN_UNARY)
#undef AG_DECLARE_PLAIN_UNARY
// relu's backward: grad where result > 0, else 0 (differentiable in both arguments).
Tensor threshold_backward(const Tensor& grad, const Tensor& result);
// tanh's and sigmoid's backward as one kernel each (PyTorch's names): grad * (1 - result^2) and
// grad * (1 - result) * result, each differentiable in both arguments.
Tensor tanh_backward(const Tensor& grad, const Tensor& result);
Tensor sigmoid_backward(const Tensor& grad, const Tensor& result);
// abs, sqrt and sign are plain unary ops of the list too. abs'(0) = 0 and sqrt'(0) = inf, as in
// PyTorch; sign has derivative 0.

// Comparisons, with broadcasting: 1 where the relation holds, else 0, in the operands' dtype
// and without history (Note [Masks are 0 and 1], ops/select.cc).
Tensor eq(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
// The larger (smaller) of a and b, with broadcasting; NaN where either is. At ties each operand
// gets half the gradient, as in PyTorch.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// min(max(a, min), max); the gradient passes where min < a < max, as in PyTorch 2.15 (not at
// the bounds).
Tensor clamp(const Tensor& a, double min, double max);
Tensor clamp_min(const Tensor& a, double min);
Tensor clamp_max(const Tensor& a, double max);
// a where cond != 0, else b, with broadcasting of all three. cond is a mask (Note [Masks are 0
// and 1]): PyTorch's is bool and never differentiated, so its gradient here is 0.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// a with `value` where mask != 0 (a and mask broadcast together).
Tensor masked_fill(const Tensor& a, const Tensor& mask, double value);

// Reductions.
Tensor sum(const Tensor& a);
Tensor sum(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor mean(const Tensor& a);
Tensor mean(const Tensor& a, int64_t dim, bool keepdim = false);
// Sums `a` down to `shape` (the inverse of broadcasting `shape` up to a's shape), as PyTorch's
// sum_to: `a` itself when it has the shape already, except for the 0-dim shape, which is sum(a);
// a view of the sum (kept at a's rank) where it drops leading dims.
Tensor sum_to(const Tensor& a, const Shape& shape);
// expand under its own name, as in PyTorch: a view of `a` (also at a's own shape: a new view),
// with stride 0 where it broadcasts (ops/view_ops.cc).
Tensor broadcast_to(const Tensor& a, const Shape& shape);

// Views (ops/view_ops.cc): each shares storage and version with its input, with PyTorch's
// strides (Note [Strided tensors], engine/tensor.h), and is differentiable. In-place ops through
// a view update the base's history too (Note [In-place ops on views] in ops/views.h).
// reshape is a view where the strides allow one (PyTorch's rule), else a copy; view() refuses
// there.
Tensor reshape(const Tensor& a, const Shape& shape);
Tensor view(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1);
Tensor t(const Tensor& a);  // transpose(0, 1) of a 2-D tensor, a itself (as a view) below
Tensor permute(const Tensor& a, const std::vector<int64_t>& dims);
Tensor expand(const Tensor& a, const Shape& sizes);  // -1 keeps a dim's size
Tensor unsqueeze(const Tensor& a, int64_t dim);
Tensor squeeze(const Tensor& a);                             // every dim of size 1
Tensor squeeze(const Tensor& a, int64_t dim);                // dim, if its size is 1
Tensor select(const Tensor& a, int64_t dim, int64_t index);  // a[..., index, ...]
Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length);
// a[..., start:end:step, ...], with Python's bounds (negative from the end, clamped).
Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor diagonal(const Tensor& a, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
Tensor unfold(const Tensor& a, int64_t dim, int64_t size, int64_t step);
// Reads a's storage at these sizes, strides and storage offset (in elements).
Tensor as_strided(const Tensor& a, const Shape& sizes, const Shape& strides, int64_t offset);
Tensor alias(const Tensor& a);
// Several views at once; as PyTorch, none may be written in place where that would be recorded.
std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> unbind(const Tensor& a, int64_t dim = 0);
// a itself when contiguous, else a contiguous copy (differentiable, as clone).
Tensor contiguous(const Tensor& a);
Tensor detach(const Tensor& a);

// Linear algebra.
Tensor mm(const Tensor& a, const Tensor& b);
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b);
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor());
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor matmul(const Tensor& a, const Tensor& b);

// Along a dim.
Tensor softmax(const Tensor& a, int64_t dim);
Tensor cumsum(const Tensor& a, int64_t dim);

// Indexing (ops/index.cc). The engine has no integer dtype (engine/dtype.h), so an index is a
// list of int64 values, as nll_loss's targets, with a shape where PyTorch's index is a tensor
// of a's rank (gather, scatter_add, the indices of max/min). Indices are not wrapped: each must
// lie in [0, size of `dim`), as PyTorch's gather, scatter_add and index_select require.
struct Index {
  Shape shape;
  std::vector<int64_t> values;  // row-major
};
// a's slices index[0], index[1], ... along dim.
Tensor index_select(const Tensor& a, int64_t dim, const std::vector<int64_t>& index);
// out[i][j][k] = a[index[i][j][k]][j][k] for dim 0 (and likewise for the other dims).
Tensor gather(const Tensor& a, int64_t dim, const Index& index);
// a copy of a with out[index[i][j][k]][j][k] += src[i][j][k] for dim 0 (likewise for the others).
Tensor scatter_add(const Tensor& a, int64_t dim, const Index& index, const Tensor& src);
// The largest (smallest) element along dim and the index of the first one, as torch.max(a, dim);
// the gradient goes to that element only.
struct ValuesIndices {
  Tensor values;
  Index indices;
};
ValuesIndices max(const Tensor& a, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& a, int64_t dim, bool keepdim = false);

// Joining (ops/join.cc; Note [Variadic ops]): the tensors side by side along an existing dim
// (sizes equal elsewhere), or along a new dim (shapes equal).
Tensor cat(const TensorList& tensors, int64_t dim = 0);
Tensor stack(const TensorList& tensors, int64_t dim = 0);

// Losses.
Tensor log_softmax(const Tensor& a, int64_t dim);
// Mean negative log-likelihood of log-probabilities [N, C] at integer class targets (N of them).
Tensor nll_loss(const Tensor& log_probs, const std::vector<int64_t>& targets);
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets);

// Dropout: multiplies by a mask of 0 and 1/(1-p). dropout2d zeroes whole channels of a
// [N, C, ...] tensor. In eval mode both return the input. Masks are deterministic in `seed`.
Tensor dropout(const Tensor& a, double p, bool train, uint64_t seed);
Tensor dropout2d(const Tensor& a, double p, bool train, uint64_t seed);

// In place (bump the version counter; PyTorch's rule: not on a leaf that requires grad while grad
// mode is on). They return `a`, whose history now ends in the in-place op.
Tensor& add_(Tensor& a, const Tensor& b);
Tensor& mul_(Tensor& a, const Tensor& b);
Tensor& copy_(Tensor& a, const Tensor& src);

}  // namespace ag::ops

namespace ag {
// Operators, so that tests and derivative formulas read like the math (each is one recorded op,
// or two for `s - a`).
inline Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return ops::sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return ops::mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return ops::div(a, b); }
inline Tensor operator-(const Tensor& a) { return ops::neg(a); }
inline Tensor operator+(const Tensor& a, double s) { return ops::add(a, s); }
inline Tensor operator+(double s, const Tensor& a) { return ops::add(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return ops::add(a, -s); }
inline Tensor operator-(double s, const Tensor& a) { return ops::add(ops::neg(a), s); }
inline Tensor operator*(const Tensor& a, double s) { return ops::mul(a, s); }
inline Tensor operator*(double s, const Tensor& a) { return ops::mul(a, s); }
inline Tensor operator/(const Tensor& a, double s) { return ops::mul(a, 1.0 / s); }
}  // namespace ag
