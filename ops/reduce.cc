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

// PyTorch's expand() to the tensor's own shape, which sum's gradient is when nothing is summed
// away: a view of g, never g itself, so grad() never hands the caller's grad_outputs back
// through a sum. Its own gradient is PyTorch's sum_to: the incoming gradient itself, except at
// 0 dims, where sum_to returns grad.sum(), a new tensor (so a second-order grad() through a
// 0-dim sum, made without create_graph, does not require grad even when its grad_outputs does).
// A derivative op of its own, so that the JIT can run the formulas that record it.
Tensor expand(const Tensor& g, const Shape& shape);

struct ExpandAsIs : OfSelf {
  static const OpSpec spec;
};
const OpSpec ExpandAsIs::spec{"expand",
                              {{self,
                                {},
                                [](const Ctx& c) {
                                  const Tensor& g = c.grad();
                                  return g.dim() == 0 ? sum(g) : g;
                                }}},
                              {AliasKind::kView, NoAttrs(),
                               [](const OpArgs& a) { return expand(a[self], a[self].shape()); }}};

Tensor expand(const Tensor& g, const Shape& shape) {
  if (g.shape() != shape) return broadcast_to(g, shape);
  Tensor out = record(ExpandAsIs::spec, {&g}, g.alias_with_shape(shape));
  mark_view(out, g);  // Note [In-place ops on views]
  return out;
}

struct Sum : OfSelf {
  static const OpSpec spec;
};
const OpSpec Sum::spec{
    "sum",
    {{self, {}, [](const Ctx& c) { return expand(c.grad(), c.input_shape(self)); }}},
    unary_forward<sum>()};

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
                              return expand(g, in);
                            }}},
                          {AliasKind::kPure, DimAttrs{0}, [](const OpArgs& a) {
                             const auto& [dim, keepdim] = a.attrs<DimAttrs>();
                             return sum(a[self], dim, keepdim);
                           }}};

struct SumTo : OfSelf {
  static const OpSpec spec;
};
const OpSpec SumTo::spec{
    "sum_to",
    {{self, {}, [](const Ctx& c) { return broadcast_to(c.grad(), c.input_shape(self)); }}},
    {AliasKind::kPure, ShapeAttrs{},
     [](const OpArgs& a) { return sum_to(a[self], a.attrs<ShapeAttrs>().shape); }}};

// The formula returns the gradient at the broadcast shape; OpNode sums it back (sum_to).
struct BroadcastTo : OfSelf {
  static const OpSpec spec;
};
const OpSpec BroadcastTo::spec{"broadcast_to",
                               {{self, {}, [](const Ctx& c) { return c.grad(); }}},
                               {AliasKind::kPure, ShapeAttrs{}, [](const OpArgs& a) {
                                  return broadcast_to(a[self], a.attrs<ShapeAttrs>().shape);
                                }}};

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
