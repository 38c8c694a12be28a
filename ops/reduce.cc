// Reductions: sum, mean and sum_to; their gradients expand the incoming one (broadcast_to).
#include "engine/error.h"
#include "ops/backend.h"
#include "ops/batched_jvp.h"
#include "ops/checks.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/spec.h"
#include "ops/views.h"

namespace ag::ops {
namespace {

// The shape `a` reduced over `dim` would have with keepdim.
Shape keepdim_shape(const Shape& shape, int64_t dim) {
  Shape s = shape;
  s[dim] = 1;
  return s;
}

// Reductions and broadcasts of one input, self.
struct OfSelf {
  static constexpr Input self{0, "self"};
};

// Sum's gradient: PyTorch's expand() of the gradient to the input's shape, a view of it (stride 0
// where it expands), also to the same shape: a new view, never g itself, so grad() never hands
// the caller's grad_outputs back through a sum.
Tensor expand_gradient(const Tensor& g, const Shape& shape) { return broadcast_to(g, shape); }

// sum_dim's gradient, PyTorch's sum_backward: unsqueezed at the dim without keepdim, expanded.
Tensor sum_dim_gradient(const Tensor& g, const Shape& in, int64_t dim, bool keepdim) {
  return expand_gradient(keepdim ? g : unsqueeze(g, dim), in);
}

struct Sum : OfSelf {
  static const OpSpec spec;
};
const OpSpec Sum::spec{
    "sum",
    {{self, {}, [](const Ctx& c) { return expand_gradient(c.grad(), c.input_shape(self)); }}},
    unary_forward<sum>()};
const DeclareJvp sum_jvp{Sum::spec, jvp_linear};
// Note [Batching rules]: each reduction sums every row over the same dims.
Shape all_ones(const JvpContext& c) { return Shape(c.primal(OfSelf::self).shape().size(), 1); }
const DeclareBatchedJvp sum_batched_jvp{
    Sum::spec, [](const JvpContext& c) { return batched_sum_to_result(c, all_ones(c), false); }};
// The input's shape with dim (kept) of size 1.
Shape kept_dim(const JvpContext& c) {
  Shape kept = c.primal(OfSelf::self).shape();
  const int64_t dim = c.attrs<DimAttrs>().dim;
  if (!kept.empty()) kept[dim < 0 ? dim + static_cast<int64_t>(kept.size()) : dim] = 1;
  return kept;
}

struct SumDim : OfSelf {
  static const OpSpec spec;
};
const OpSpec SumDim::spec{"sum_dim",
                          {{self,
                            {},
                            [](const Ctx& c) {
                              const auto& [dim, keepdim] = c.attrs<DimAttrs>();
                              return sum_dim_gradient(c.grad(), c.input_shape(self), dim, keepdim);
                            }}},
                          {AliasKind::kPure, DimAttrs{0}, [](const OpArgs& a) {
                             const auto& [dim, keepdim] = a.attrs<DimAttrs>();
                             return sum(a[self], dim, keepdim);
                           }}};
const DeclareJvp sum_dim_jvp{SumDim::spec, jvp_linear};
const DeclareBatchedJvp sum_dim_batched_jvp{
    SumDim::spec, [](const JvpContext& c) { return batched_sum_to_result(c, kept_dim(c), false); }};

// Note [mean's gradient is a new tensor]
// PyTorch's mean_backward divides the expanded gradient (sum_backward(grad) / n): a new,
// contiguous tensor, not a view of the incoming gradient as sum's. So mean is an op of its own
// (not sum's node and a scaling after it, whose gradient would be sum's view): its gradient
// scales the expanded gradient, which writes a new tensor. Both scale by 1/n, forward and
// backward, as the engine always has. Over no elements that is 0 * inf, NaN, as PyTorch's 0 / 0;
// the gradient there has no elements.
double inverse_count(int64_t n) { return 1.0 / static_cast<double>(n); }

struct Mean : OfSelf {
  static const OpSpec spec;
};
const OpSpec Mean::spec{"mean",
                        {{self,
                          {},
                          [](const Ctx& c) {
                            const Shape& in = c.input_shape(self);
                            return mul(expand_gradient(c.grad(), in), inverse_count(ag::numel(in)));
                          }}},
                        unary_forward<mean>()};
const DeclareJvp mean_jvp{Mean::spec, jvp_linear};
const DeclareBatchedJvp mean_batched_jvp{
    Mean::spec, [](const JvpContext& c) { return batched_sum_to_result(c, all_ones(c), true); }};

struct MeanDim : OfSelf {
  static const OpSpec spec;
};
const OpSpec MeanDim::spec{"mean_dim",
                           {{self,
                             {},
                             [](const Ctx& c) {
                               const Shape& in = c.input_shape(self);
                               const auto& [dim, keepdim] = c.attrs<DimAttrs>();
                               return mul(sum_dim_gradient(c.grad(), in, dim, keepdim),
                                          inverse_count(in[dim]));
                             }}},
                           {AliasKind::kPure, DimAttrs{0}, [](const OpArgs& a) {
                              const auto& [dim, keepdim] = a.attrs<DimAttrs>();
                              return mean(a[self], dim, keepdim);
                            }}};
const DeclareJvp mean_dim_jvp{MeanDim::spec, jvp_linear};
const DeclareBatchedJvp mean_dim_batched_jvp{
    MeanDim::spec, [](const JvpContext& c) { return batched_sum_to_result(c, kept_dim(c), true); }};

// PyTorch's sum(dims, keepdim=True) inside sum_to: the result keeps a's rank.
struct SumTo : OfSelf {
  static const OpSpec spec;
};
const OpSpec SumTo::spec{
    "sum_to",
    {{self, {}, [](const Ctx& c) { return expand_gradient(c.grad(), c.input_shape(self)); }}},
    {AliasKind::kPure, ShapeAttrs{},
     [](const OpArgs& a) { return sum_to(a[self], a.attrs<ShapeAttrs>().shape); }}};
const DeclareJvp sum_to_jvp{SumTo::spec, jvp_linear};
// The result's shape, with the leading dims sum_to drops kept as 1s.
const DeclareBatchedJvp sum_to_batched_jvp{SumTo::spec, [](const JvpContext& c) {
                                             Shape kept = c.result().shape();
                                             const int64_t rank = c.primal(OfSelf::self).dim();
                                             while (static_cast<int64_t>(kept.size()) < rank) {
                                               kept.insert(kept.begin(), 1);
                                             }
                                             return batched_sum_to_result(c, kept, false);
                                           }};

// a summed over `dim` (kept, of size 1), or squeezed there without keepdim.
Tensor summed_over(const Tensor& a, int64_t dim, bool keepdim) {
  Tensor out = backend_for(a.device()).sum_to(a, keepdim_shape(a.shape(), dim));
  if (keepdim) return out;
  Shape squeezed = a.shape();
  squeezed.erase(squeezed.begin() + dim);
  return out.alias_with_shape(squeezed);
}

}  // namespace

Tensor sum(const Tensor& a) {
  check_defined("sum", a, "input");
  return record(Sum::spec, {&a}, backend_for(a.device()).sum_all(a));
}

Tensor sum(const Tensor& a, int64_t dim, bool keepdim) {
  check_defined("sum", a, "input");
  dim = normalize_dim("sum", dim, a);
  if (a.dim() == 0) return sum(a);  // Note [Dims of a 0-dim tensor]: the whole tensor
  return record(SumDim::spec, {&a}, summed_over(a, dim, keepdim), DimAttrs{dim, keepdim});
}

Tensor mean(const Tensor& a) {
  check_defined("mean", a, "input");
  Backend& be = backend_for(a.device());
  Tensor out = be.unary(UnaryKind::kMulScalar, be.sum_all(a), inverse_count(a.numel()));
  return record(Mean::spec, {&a}, std::move(out));
}

Tensor mean(const Tensor& a, int64_t dim, bool keepdim) {
  check_defined("mean", a, "input");
  const int64_t d = normalize_dim("mean", dim, a);
  if (a.dim() == 0) return mean(a);  // Note [Dims of a 0-dim tensor]: the whole tensor
  const int64_t n = a.shape()[d];
  Tensor out = backend_for(a.device())
                   .unary(UnaryKind::kMulScalar, summed_over(a, d, keepdim), inverse_count(n));
  return record(MeanDim::spec, {&a}, std::move(out), DimAttrs{d, keepdim});
}

// As PyTorch's at::sum_to: the 0-dim shape is a.sum(), a new tensor even when `a` is 0-dim; `a`
// itself at its own shape; else a's sum over the leading dims and the dims `shape` has as 1, kept
// (sum_to's node), and where it drops leading dims, a view of that sum at `shape`.
Tensor sum_to(const Tensor& a, const Shape& shape) {
  check_defined("sum_to", a, "input");
  if (shape.empty()) return sum(a);
  if (a.shape() == shape) return a;
  check_broadcastable_to("sum_to", shape, a.shape());
  const size_t leading = a.shape().size() - shape.size();
  Shape kept(leading, 1);
  kept.insert(kept.end(), shape.begin(), shape.end());
  Tensor out = record(SumTo::spec, {&a}, backend_for(a.device()).sum_to(a, kept),
                      [&] { return ShapeAttrs{kept}; });
  return leading == 0 ? out : view(out, shape);
}

}  // namespace ag::ops
