// Reductions and broadcasting: each one's gradient is the other.
#include "engine/error.h"
#include "ops/backend.h"
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

// Sum's gradient: PyTorch's expand() of the gradient to the input's shape. To the same shape it
// is the view op expand (ops/view_ops.cc), a view of g, never g itself, so grad() never hands the
// caller's grad_outputs back through a sum; to a larger one it is written out (broadcast_to),
// which the kernels that read it then take as a contiguous operand.
Tensor expand_gradient(const Tensor& g, const Shape& shape) {
  return g.shape() == shape ? expand(g, shape) : broadcast_to(g, shape);
}

struct Sum : OfSelf {
  static const OpSpec spec;
};
const OpSpec Sum::spec{
    "sum",
    {{self, {}, [](const Ctx& c) { return expand_gradient(c.grad(), c.input_shape(self)); }}},
    unary_forward<sum>()};
const DeclareJvp sum_jvp{Sum::spec, jvp_linear};

struct SumDim : OfSelf {
  static const OpSpec spec;
};
const OpSpec SumDim::spec{"sum_dim",
                          {{self,
                            {},
                            [](const Ctx& c) {
                              const Shape& in = c.input_shape(self);
                              const auto& [dim, keepdim] = c.attrs<DimAttrs>();
                              Tensor g = c.grad();
                              if (!keepdim) g = reshape(g, keepdim_shape(in, dim));
                              return expand_gradient(g, in);
                            }}},
                          {AliasKind::kPure, DimAttrs{0}, [](const OpArgs& a) {
                             const auto& [dim, keepdim] = a.attrs<DimAttrs>();
                             return sum(a[self], dim, keepdim);
                           }}};
const DeclareJvp sum_dim_jvp{SumDim::spec, jvp_linear};

struct SumTo : OfSelf {
  static const OpSpec spec;
};
const OpSpec SumTo::spec{
    "sum_to",
    {{self, {}, [](const Ctx& c) { return broadcast_to(c.grad(), c.input_shape(self)); }}},
    {AliasKind::kPure, ShapeAttrs{},
     [](const OpArgs& a) { return sum_to(a[self], a.attrs<ShapeAttrs>().shape); }}};
const DeclareJvp sum_to_jvp{SumTo::spec, jvp_linear};

// The formula returns the gradient at the broadcast shape; OpNode sums it back (sum_to).
struct BroadcastTo : OfSelf {
  static const OpSpec spec;
};
const OpSpec BroadcastTo::spec{"broadcast_to",
                               {{self, {}, [](const Ctx& c) { return c.grad(); }}},
                               {AliasKind::kPure, ShapeAttrs{}, [](const OpArgs& a) {
                                  return broadcast_to(a[self], a.attrs<ShapeAttrs>().shape);
                                }}};
const DeclareJvp broadcast_to_jvp{BroadcastTo::spec, jvp_linear};

}  // namespace

Tensor sum(const Tensor& a) {
  check_defined("sum", a, "input");
  return record(Sum::spec, {&a}, backend_for(a.device()).sum_all(a));
}

Tensor sum(const Tensor& a, int64_t dim, bool keepdim) {
  check_defined("sum", a, "input");
  dim = normalize_dim("sum", dim, a);
  if (a.dim() == 0) return sum(a);  // Note [Dims of a 0-dim tensor]: the whole tensor
  Shape kept = keepdim_shape(a.shape(), dim);
  Tensor out = backend_for(a.device()).sum_to(a, kept);
  if (!keepdim) {
    Shape squeezed = a.shape();
    squeezed.erase(squeezed.begin() + dim);
    out = out.alias_with_shape(squeezed);
  }
  return record(SumDim::spec, {&a}, out, DimAttrs{dim, keepdim});
}

Tensor mean(const Tensor& a) {
  AG_CHECK(a.defined() && a.numel() > 0, "mean: input ", a.describe(), " has no elements");
  return mul(sum(a), 1.0 / static_cast<double>(a.numel()));
}

Tensor mean(const Tensor& a, int64_t dim, bool keepdim) {
  check_defined("mean", a, "input");
  const int64_t d = normalize_dim("mean", dim, a);
  if (a.dim() == 0) return mean(a);  // Note [Dims of a 0-dim tensor]: the whole tensor
  const int64_t n = a.shape()[d];
  AG_CHECK(n > 0, "mean: dim ", dim, " of ", a.describe(), " is empty");
  return mul(sum(a, dim, keepdim), 1.0 / static_cast<double>(n));
}

Tensor sum_to(const Tensor& a, const Shape& shape) {
  check_defined("sum_to", a, "input");
  // As PyTorch's sum_to: the 0-dim shape is a.sum(), a new tensor even when `a` is 0-dim.
  if (shape.empty()) return sum(a);
  if (a.shape() == shape) return a;
  check_broadcastable_to("sum_to", shape, a.shape());
  return record(SumTo::spec, {&a}, backend_for(a.device()).sum_to(a, shape),
                [&] { return ShapeAttrs{shape}; });
}

Tensor broadcast_to(const Tensor& a, const Shape& shape) {
  check_defined("broadcast_to", a, "input");
  if (a.shape() == shape) return a;
  check_broadcastable_to("broadcast_to", a.shape(), shape);
  return record(BroadcastTo::spec, {&a}, backend_for(a.device()).broadcast_to(a, shape),
                [&] { return ShapeAttrs{shape}; });
}

}  // namespace ag::ops
