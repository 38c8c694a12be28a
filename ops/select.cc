// The selections: where, masked_fill and clamp (the comparisons that make their masks, and
// clamp_min/clamp_max, maximum/minimum, are kinds of the op list: ops/elementwise.cc).
#include <algorithm>

#include "engine/error.h"
#include "ops/backend.h"
#include "ops/batched_jvp.h"
#include "ops/checks.h"
#include "ops/host_kernels.h"
#include "ops/in_layout.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/spec.h"

namespace ag::ops {

// Note [Masks are 0 and 1]
// The engine's dtypes are float32 and float64 (engine/dtype.h): it has no bool. PyTorch's
// comparisons return bool tensors, which where and masked_fill take as their condition; here
// eq/gt/ge return 1 where the relation holds and 0 elsewhere, in their operands' dtype, and
// where/masked_fill read any nonzero element of a condition as true. A condition never carries
// a gradient in PyTorch (bool tensors cannot require grad), and a comparison's result has no
// history here; a condition that requires grad anyway (a leaf made by the caller) gets the
// gradient 0, which is its derivative: the selection is constant in it. PyTorch's condition is
// a tensor of its own (the bool result of `mask != 0`, as the conformance scripts spell it), so
// where and masked_fill save a copy of the mask they read (condition_copy), not the caller's
// tensor: a later in-place write to the caller's mask fails no version check, as in PyTorch.

namespace {

Tensor scalar_of(double value, const Tensor& like) {
  return full({}, value, like.dtype(), like.device());
}

// NumPy broadcasting of where's three shapes.
Shape broadcast_three(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Shape out(std::max({cond.dim(), a.dim(), b.dim()}), 1);
  for (const Tensor* t : {&cond, &a, &b}) {
    const size_t lead = out.size() - t->shape().size();
    for (size_t i = 0; i < t->shape().size(); ++i) {
      const int64_t d = t->shape()[i];
      AG_CHECK(d == out[lead + i] || d == 1 || out[lead + i] == 1, "where: condition ",
               to_string(cond.shape()), ", self ", to_string(a.shape()), " and other ",
               to_string(b.shape()), " cannot be broadcast together");
      if (d != 1) out[lead + i] = d;
    }
  }
  return out;
}

// where(condition, self, other): derivatives.yaml's where(condition, grad, 0) and
// where(condition, 0, grad); the condition's is 0 (Note [Masks are 0 and 1]).
struct Where {
  static constexpr Input condition{0, "condition"}, self{1, "self"}, other{2, "other"};
  static constexpr ForwardValue mask{0, "condition"};  // condition_copy()
  static const OpSpec spec;
};
const OpSpec Where::spec{
    "where",
    {{condition, {}, [](const Ctx& c) { return zeros_like(c.grad()); }},
     {self, {mask}, [](const Ctx& c) { return where(c[mask], c.grad(), scalar_of(0, c.grad())); }},
     {other,
      {mask},
      [](const Ctx& c) { return where(c[mask], scalar_of(0, c.grad()), c.grad()); }}},
    {AliasKind::kPure, NoAttrs(),
     [](const OpArgs& a) { return where(a[condition], a[self], a[other]); }}};
// where(condition, self_t, other_t): the mask the formulas read is kept only when a node is
// recorded, so the rule reads the condition itself.
const DeclareJvp where_jvp{Where::spec, [](const JvpContext& c) {
                             return where(c.primal(Where::condition),
                                          c.tangent_or_zeros(Where::self),
                                          c.tangent_or_zeros(Where::other));
                           }};
// The tangents aligned past the batch dim; the condition, a row's, broadcasts as it is.
const DeclareBatchedJvp where_batched_jvp{
    Where::spec, [](const JvpContext& c) {
      const int64_t rank = c.result().dim();
      return where(c.primal(Where::condition), align_batched(c.tangent_or_zeros(Where::self), rank),
                   align_batched(c.tangent_or_zeros(Where::other), rank));
    }};

// masked_fill(self, mask, value): derivatives.yaml's grad.masked_fill(mask, 0).
struct MaskedFill {
  static constexpr Input self{0, "self"}, mask{1, "mask"};
  static constexpr ForwardValue saved_mask{0, "mask"};  // condition_copy()
  static const OpSpec spec;
};
const OpSpec MaskedFill::spec{
    "masked_fill",
    {{self, {saved_mask}, [](const Ctx& c) { return masked_fill(c.grad(), c[saved_mask], 0.0); }},
     {mask, {}, [](const Ctx& c) { return zeros_like(c.grad()); }}},
    {AliasKind::kPure, ScalarAttrs{0.0},
     [](const OpArgs& a) { return masked_fill(a[self], a[mask], a.attrs<ScalarAttrs>().scalar); }}};
// self_t.masked_fill(mask, 0), reading the mask itself (as where's rule).
const DeclareJvp masked_fill_jvp{MaskedFill::spec, [](const JvpContext& c) {
                                   return masked_fill(c.tangent_or_zeros(MaskedFill::self),
                                                      c.primal(MaskedFill::mask), 0.0);
                                 }};
const DeclareBatchedJvp masked_fill_batched_jvp{
    MaskedFill::spec, [](const JvpContext& c) {
      return masked_fill(align_batched(c.tangent_or_zeros(MaskedFill::self), c.result().dim()),
                         c.primal(MaskedFill::mask), 0.0);
    }};

// clamp(self, min, max): PyTorch 2.15's clamp_backward, where(min < self < max, grad, 0): the
// bounds themselves pass no gradient (as clamp_min's and clamp_max's, ops/elementwise.cc).
struct Clamp {
  static constexpr Input self{0, "self"};
  static const OpSpec spec;
};
const OpSpec Clamp::spec{"clamp",
                         {{self,
                           {self},
                           [](const Ctx& c) {
                             const auto& [min, max] = c.attrs<ClampAttrs>();
                             const Tensor& g = c.grad();
                             const Tensor inside =
                                 gt(c[self], scalar_of(min, g)) * gt(scalar_of(max, g), c[self]);
                             return where(inside, g, scalar_of(0, g));
                           }}},
                         {AliasKind::kPure, ClampAttrs{0, 0}, [](const OpArgs& a) {
                            const auto& [min, max] = a.attrs<ClampAttrs>();
                            return clamp(a[Clamp::self], min, max);
                          }}};
const DeclareJvp clamp_jvp{Clamp::spec, jvp_from_formulas};

// Note [Masks are 0 and 1]: the mask a recorded where or masked_fill keeps, a copy of its own;
// none when nothing is recorded.
Tensor condition_copy(const Tensor& cond, std::initializer_list<const Tensor*> inputs) {
  return records_node(inputs) ? copy_of(cond) : Tensor();
}

// An operand at the result's shape (a copy where it broadcasts).
Tensor expanded(const Tensor& t, const Shape& shape) {
  return t.shape() == shape ? t : backend_for(t.device()).broadcast_to(t, shape);
}

}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_same_dtype_and_device("where", a, b);
  check_same_dtype_and_device("where", cond, a);
  const Shape shape = broadcast_three(cond, a, b);
  // Note [Output layout of elementwise ops] (ops/output_layout.h): PyTorch's operand order.
  Tensor out =
      contiguous_output(shape, {&cond, &a, &b})
          ? host::where(expanded(cond, shape), expanded(a, shape), expanded(b, shape))
          : run_in_layout(shape, output_strides(shape, {&cond, &a, &b}), host::where, cond, a, b);
  return record(Where::spec, {&cond, &a, &b}, std::move(out), NoAttrs(),
                {condition_copy(cond, {&cond, &a, &b})});
}

Tensor masked_fill(const Tensor& a, const Tensor& mask, double value) {
  check_same_dtype_and_device("masked_fill", a, mask);
  const Shape shape = broadcast_shapes("masked_fill", a, mask);
  Tensor out = host::where(expanded(mask, shape),
                           backend_for(a.device()).fill(shape, value, a.dtype(), a.device()),
                           expanded(a, shape));
  return record(MaskedFill::spec, {&a, &mask}, std::move(out), ScalarAttrs{value},
                {condition_copy(mask, {&a, &mask})});
}

Tensor clamp(const Tensor& a, double min, double max) {
  check_defined("clamp", a, "input");
  Backend& be = backend_for(a.device());
  auto kernel = [&](const Tensor& x) {
    return be.unary(UnaryKind::kClampMax, be.unary(UnaryKind::kClampMin, x, min), max);
  };
  // Note [Output layout of elementwise ops] (ops/output_layout.h).
  Tensor out = contiguous_output(a.shape(), {&a})
                   ? kernel(a)
                   : run_in_layout(a.shape(), output_strides(a.shape(), {&a}), kernel, a);
  return record(Clamp::spec, {&a}, std::move(out), ClampAttrs{min, max});
}

}  // namespace ag::ops
