// The elementwise ops' derivatives, one rule per op (Note [Derivative spec], ops/spec.h), read as
// PyTorch's derivatives.yaml: the rule's kind is the op's line in the op list (Note [The op list],
// ops/kinds.h), then one formula per input: {input, the slots it uses, gradient}. self, other:
// the inputs; result: the op's result. The forwards and kernels follow the rules.
#include "engine/counters.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "ops/backend.h"
#include "ops/checks.h"
#include "ops/elementwise_rule.h"
#include "ops/fused.h"
#include "ops/in_layout.h"
#include "ops/op_list.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/spec.h"
#include "ops/trace_hook.h"

namespace ag::ops {
namespace {
using namespace slots;

constexpr Input exponent{1, "exponent"};                      // pow(self, exponent)
constexpr Input grad_output{0, "grad"}, output{1, "result"};  // *_backward(grad_output, output)
namespace sp {                                                // scaled_product(a, b, c, scale)
constexpr Input a{0, "a"}, b{1, "b"}, c{2, "c"};
}

// Formulas defined below the rules.
Tensor scalar_like(double value, const Tensor& t);
Tensor tie_split(const Ctx& c, const Tensor& x, const Tensor& y);
Tensor pow_backward_self(const Tensor& grad, const Tensor& self, const Tensor& exponent);
Tensor pow_backward_exponent(const Tensor& grad, const Tensor& self, const Tensor& exponent,
                             const Tensor& result);
template <const Input& J, const Input& K>
Tensor scaled_product_of(const Ctx& x);
template <const Input& J, const Input& K>
bool add_scaled_product_of(const Tensor& sum, const Ctx& x);

const auto add_rule =
    binary_rule<BinaryKind::kAdd, add>({self, {}, [](const Ctx& c) { return c.grad(); }},
                                       {other, {}, [](const Ctx& c) { return c.grad(); }});
const auto sub_rule =
    binary_rule<BinaryKind::kSub, sub>({self, {}, [](const Ctx& c) { return c.grad(); }},
                                       {other, {}, [](const Ctx& c) { return -c.grad(); }});
const auto mul_rule = binary_rule<BinaryKind::kMul, mul>(
    {self, {other}, [](const Ctx& c) { return c.grad() * c[other]; }},
    {other, {self}, [](const Ctx& c) { return c.grad() * c[self]; }});
// mul_(self, other): mul's formulas, asked, not restated (Note [In-place saves], ops/spec.h); after
// mul's rule, so that it is built after it.
const OpSpec mul_inplace_rule{op_name(OpId::kMulInplace), mul_rule, in_place_forward<mul_>()};
// other: PyTorch's div_tensor_other_backward, in its order: the product under create_graph
// reads (self / other) / other, not self.
const auto div_rule = binary_rule<BinaryKind::kDiv, div>(
    {self, {other}, [](const Ctx& c) { return c.grad() / c[other]; }},
    {other, {self, other}, [](const Ctx& c) {
       return -c.grad() * (c[self] / c[other] / c[other]);
     }});
// Note [pow's gradients select]
const auto pow_rule = binary_rule<BinaryKind::kPow, pow>(
    {self,
     {self, exponent},
     [](const Ctx& c) { return pow_backward_self(c.grad(), c[self], c[exponent]); }},
    {exponent, {self, exponent, result}, [](const Ctx& c) {
       return pow_backward_exponent(c.grad(), c[self], c[exponent], c[result]);
     }});

const auto add_scalar_rule =
    scalar_rule<UnaryKind::kAddScalar, add>({}, [](const Ctx& c) { return c.grad(); });
const auto mul_scalar_rule = scalar_rule<UnaryKind::kMulScalar, mul>(
    {}, [](const Ctx& c) { return c.grad() * c.attrs<ScalarAttrs>().scalar; });
// PyTorch: x^0 has gradient 0 everywhere (not 0 * 0^-1 = NaN at 0), a constant: no history.
const auto pow_scalar_rule = scalar_rule<UnaryKind::kPowScalar, pow>({self}, [](const Ctx& c) {
  const double e = c.attrs<ScalarAttrs>().scalar;
  if (e == 0.0) return zeros_like(c.grad());
  return c.grad() * (e * pow(c[self], e - 1.0));
});

const auto neg_rule = unary_rule<UnaryKind::kNeg>({}, [](const Ctx& c) { return -c.grad(); });
const auto exp_rule =
    unary_rule<UnaryKind::kExp>({result}, [](const Ctx& c) { return c.grad() * c[result]; });
const auto log_rule =
    unary_rule<UnaryKind::kLog>({self}, [](const Ctx& c) { return c.grad() / c[self]; });
// Fused with a waiting gradient (Note [Sums fused into formulas], engine/engine.cc).
const auto tanh_rule = unary_rule<UnaryKind::kTanh>(
    {result}, [](const Ctx& c) { return tanh_backward(c.grad(), c[result]); },
    [](const Tensor& sum, const Ctx& c) {
      return add_tanh_backward_into(sum, c.grad(), c[result]);
    });
const auto sigmoid_rule = unary_rule<UnaryKind::kSigmoid>(
    {result}, [](const Ctx& c) { return sigmoid_backward(c.grad(), c[result]); },
    [](const Tensor& sum, const Ctx& c) {
      return add_sigmoid_backward_into(sum, c.grad(), c[result]);
    });
const auto relu_rule = unary_rule<UnaryKind::kRelu>(
    {result}, [](const Ctx& c) { return threshold_backward(c.grad(), c[result]); });
const auto sin_rule =
    unary_rule<UnaryKind::kSin>({self}, [](const Ctx& c) { return c.grad() * cos(c[self]); });
const auto cos_rule =
    unary_rule<UnaryKind::kCos>({self}, [](const Ctx& c) { return c.grad() * -sin(c[self]); });
// PyTorch's grad * self.sgn(): 0 at 0.
const auto abs_rule =
    unary_rule<UnaryKind::kAbs>({self}, [](const Ctx& c) { return c.grad() * sign(c[self]); });
// PyTorch's grad / (2 * result): inf at 0.
const auto sqrt_rule = unary_rule<UnaryKind::kSqrt>(
    {result}, [](const Ctx& c) { return c.grad() / (2.0 * c[result]); });
const auto sign_rule =
    unary_rule<UnaryKind::kSign>({}, [](const Ctx& c) { return zeros_like(c.grad()); });

// As PyTorch 2.15's derivatives.yaml: where(self > min, grad, 0), the bound itself excluded.
const auto clamp_min_rule = scalar_rule<UnaryKind::kClampMin, clamp_min>({self}, [](const Ctx& c) {
  const Tensor& g = c.grad();
  return where(gt(c[self], scalar_like(c.attrs<ScalarAttrs>().scalar, g)), g, scalar_like(0, g));
});
const auto clamp_max_rule = scalar_rule<UnaryKind::kClampMax, clamp_max>({self}, [](const Ctx& c) {
  const Tensor& g = c.grad();
  return where(gt(scalar_like(c.attrs<ScalarAttrs>().scalar, g), c[self]), g, scalar_like(0, g));
});
// Note [Ties split the gradient]
// maximum and minimum give each operand half the gradient where they are equal, as PyTorch's
// derivatives.yaml: where(self == other, grad / 2, grad).masked_fill_(self < other, 0) for
// maximum's self, and the mirror images for other and for minimum. NaN compares unequal and
// neither less nor greater, so both operands get the whole gradient there, as in PyTorch.
const auto maximum_rule = binary_rule<BinaryKind::kMaximum, maximum>(
    {self, {self, other}, [](const Ctx& c) { return tie_split(c, c[other], c[self]); }},
    {other, {self, other}, [](const Ctx& c) { return tie_split(c, c[self], c[other]); }});
const auto minimum_rule = binary_rule<BinaryKind::kMinimum, minimum>(
    {self, {self, other}, [](const Ctx& c) { return tie_split(c, c[self], c[other]); }},
    {other, {self, other}, [](const Ctx& c) { return tie_split(c, c[other], c[self]); }});
// The comparisons have no derivative (Note [Masks are 0 and 1], ops/select.cc).
const KindRule<BinaryKind::kEq> eq_rule{
    kind_name(BinaryKind::kEq), {self, other}, binary_forward<eq>()};
const KindRule<BinaryKind::kGt> gt_rule{
    kind_name(BinaryKind::kGt), {self, other}, binary_forward<gt>()};
const KindRule<BinaryKind::kGe> ge_rule{
    kind_name(BinaryKind::kGe), {self, other}, binary_forward<ge>()};

// relu's derivative, grad * (result > 0), as an op of its own (PyTorch's threshold_backward).
// Its derivative w.r.t. grad is the same mask; w.r.t. result it is zero, but recording that edge
// keeps a relu gradient connected to relu's input, so grad(grad(y, x), x) on a ReLU network
// returns (zero) gradients through the graph and a final backward reaches the weights, exactly
// as in PyTorch, instead of failing with "not reachable".
const auto threshold_backward_rule =
    binary_rule<BinaryKind::kThresholdBackward, threshold_backward>(
        {grad_output,
         {output},
         [](const Ctx& c) { return threshold_backward(c.grad(), c[output]); }},
        {output, {}, [](const Ctx& c) { return zeros_like(c.grad()); }});
// tanh's derivative, grad * (1 - result^2), as an op of its own (PyTorch's tanh_backward): one
// kernel instead of three, and its own derivatives (as in derivatives.yaml) where the inlined
// formula's graph would record three nodes, five formulas and a gradient sum under create_graph.
// Both formulas and the op itself fuse with a waiting gradient.
const auto tanh_backward_rule = binary_rule<BinaryKind::kTanhBackward, tanh_backward>(
    {grad_output,
     {output},
     [](const Ctx& c) { return tanh_backward(c.grad(), c[output]); },
     [](const Tensor& sum, const Ctx& c) {
       return add_tanh_backward_into(sum, c.grad(), c[output]);
     }},
    {output,
     {grad_output, output},
     [](const Ctx& c) { return scaled_product(c.grad(), c[output], c[grad_output], -2.0); },
     [](const Tensor& sum, const Ctx& c) {
       return add_scaled_product_into(sum, c.grad(), c[output], c[grad_output], -2.0);
     }},
    [](const Tensor& sum, const OpArgs& x) {
      return add_tanh_backward_into(sum, x[grad_output], x[output]);
    });
// sigmoid's derivative, grad * (1 - result) * result, as an op of its own (PyTorch's
// sigmoid_backward), as tanh_backward is: one kernel, and under create_graph one node whose
// derivatives are derivatives.yaml's. The result's is PyTorch's formula as written,
// grad * grad_output * (-2 * output + 1), its ops recorded as PyTorch records them.
const auto sigmoid_backward_rule = binary_rule<BinaryKind::kSigmoidBackward, sigmoid_backward>(
    {grad_output,
     {output},
     [](const Ctx& c) { return sigmoid_backward(c.grad(), c[output]); },
     [](const Tensor& sum, const Ctx& c) {
       return add_sigmoid_backward_into(sum, c.grad(), c[output]);
     }},
    {output,
     {grad_output, output},
     [](const Ctx& c) { return c.grad() * c[grad_output] * (-2.0 * c[output] + 1.0); }},
    [](const Tensor& sum, const OpArgs& x) {
      return add_sigmoid_backward_into(sum, x[grad_output], x[output]);
    });

// scaled_product(a, b, c, scale) = a * ((b * scale) * c) (Note [Fused formula kernels],
// ops/fused.cc): each formula is the gradient times the other two operands, scaled.
const OpSpec scaled_product_rule{
    "scaled_product",
    {{sp::a, {sp::b, sp::c}, scaled_product_of<sp::b, sp::c>, add_scaled_product_of<sp::b, sp::c>},
     {sp::b, {sp::a, sp::c}, scaled_product_of<sp::a, sp::c>, add_scaled_product_of<sp::a, sp::c>},
     {sp::c, {sp::a, sp::b}, scaled_product_of<sp::a, sp::b>, add_scaled_product_of<sp::a, sp::b>}},
    {AliasKind::kPure, ScalarAttrs{0.0},
     [](const OpArgs& x) {
       return scaled_product(x[sp::a], x[sp::b], x[sp::c], x.attrs<ScalarAttrs>().scalar);
     },
     [](const Tensor& sum, const OpArgs& x) {
       return add_scaled_product_into(sum, x[sp::a], x[sp::b], x[sp::c],
                                      x.attrs<ScalarAttrs>().scalar);
     }}};
const DeclareJvp scaled_product_jvp{scaled_product_rule, jvp_from_formulas};

// The formulas defined below the rules.

// A 0-dim tensor of t's dtype and device (PyTorch's at::scalar_tensor(value, t.options())).
Tensor scalar_like(double value, const Tensor& t) { return full({}, value, t.dtype(), t.device()); }

// Note [Ties split the gradient]: the gradient, halved where x == y, and 0 where x > y (the
// operand is beaten there).
Tensor tie_split(const Ctx& c, const Tensor& x, const Tensor& y) {
  const Tensor& g = c.grad();
  return masked_fill(where(eq(x, y), g * 0.5, g), gt(x, y), 0.0);
}

template <const Input& J, const Input& K>
Tensor scaled_product_of(const Ctx& x) {
  return scaled_product(x.grad(), x[J], x[K], x.attrs<ScalarAttrs>().scalar);
}
template <const Input& J, const Input& K>
bool add_scaled_product_of(const Tensor& sum, const Ctx& x) {
  return add_scaled_product_into(sum, x.grad(), x[J], x[K], x.attrs<ScalarAttrs>().scalar);
}

// Note [pow's gradients select]
// PyTorch's gradients of pow with a tensor exponent are selections (at::where), not products:
// the base's is 0 where the exponent is 0 (not 0 * base^-1, NaN at a base of 0), the exponent's
// is 0 where the base is 0 and the exponent is not negative (not 0^e * log(0)). A selection also
// has its own derivative: under create_graph, the base's gradient does not depend on the exponent
// where it was selected away, so its derivative there is 0, not 1 / base. The engine selects the
// same way: threshold_backward(value, keep) is value where keep > 0, else 0, and differentiable
// in value alone; `keep` is a constant built from the same kernels.

// Flags without history, each 1 where its condition holds and 0 elsewhere (NaN included as
// PyTorch's comparisons take it: not 0, not negative). The op set has no comparisons; and
// threshold_backward(1, y) is 1 exactly where y > 0, which is false for NaN.
Tensor flag_positive(const Tensor& x) { return threshold_backward(ones_like(x), x); }
Tensor flag_nan(const Tensor& x) { return 1.0 - flag_positive(x * x + 1.0); }
Tensor flag_nonzero(const Tensor& x) { return flag_positive(x) + flag_positive(-x) + flag_nan(x); }

// `value` where `keep` > 0, else 0 (keep broadcast to value's shape).
Tensor select_where(const Tensor& value, const Tensor& keep) {
  return threshold_backward(value, broadcast_to(keep, value.shape()));
}

Tensor pow_backward_self(const Tensor& grad, const Tensor& self, const Tensor& exponent) {
  Tensor keep;
  {
    NoGradGuard constant;
    keep = flag_nonzero(exponent.detach());
  }
  return select_where(grad * (exponent * pow(self, exponent - 1.0)), keep);
}

Tensor pow_backward_exponent(const Tensor& grad, const Tensor& self, const Tensor& exponent,
                             const Tensor& result) {
  Tensor keep;
  {
    NoGradGuard constant;
    const Tensor e = exponent.detach();
    keep = flag_nonzero(self.detach()) + flag_positive(-e) + flag_nan(e);
  }
  return grad * select_where(result * log(self), keep);
}

// The kernels in the output's layout (Note [Output layout of elementwise ops],
// ops/output_layout.h): a contiguous output (contiguous operands, the common case, or a
// broadcast gradient) comes from the kernel directly; others go through Note [Kernels run in the
// output's order].
[[gnu::noinline]] Tensor strided_binary(BinaryKind kind, const Tensor& a, const Tensor& b,
                                        const Shape& shape) {
  Backend& backend = backend_for(a.device());
  return run_in_layout(
      shape, output_strides(shape, {&a, &b}),
      [&](const Tensor& x, const Tensor& y) { return backend.binary(kind, x, y, x.shape()); }, a,
      b);
}
Tensor binary_kernel(BinaryKind kind, const Tensor& a, const Tensor& b, const Shape& shape) {
  if (contiguous_output(shape, {&a, &b})) return backend_for(a.device()).binary(kind, a, b, shape);
  return strided_binary(kind, a, b, shape);
}
// `wrapped_scalar`: PyTorch's op takes the scalar as a 0-d tensor operand (add, mul), which
// changes rule 1 of the Note; clamp and pow take it as an argument.
[[gnu::noinline]] Tensor strided_unary(UnaryKind kind, const Tensor& a, double scalar,
                                       bool wrapped_scalar) {
  Backend& backend = backend_for(a.device());
  return run_in_layout(
      a.shape(), output_strides(a.shape(), {&a}, wrapped_scalar),
      [&](const Tensor& x) { return backend.unary(kind, x, scalar); }, a);
}
Tensor unary_kernel(UnaryKind kind, const Tensor& a, double scalar, bool wrapped_scalar = false) {
  if (contiguous_output(a.shape(), {&a}, wrapped_scalar)) {
    return backend_for(a.device()).unary(kind, a, scalar);
  }
  return strided_unary(kind, a, scalar, wrapped_scalar);
}

// The forwards: each runs its rule's kind (KindRule, ops/elementwise_rule.h) and records the rule.
template <BinaryKind K>
Tensor binary_op(const KindRule<K>& rule, const Tensor& a, const Tensor& b) {
  check_same_dtype_and_device(rule.name().c_str(), a, b);
  // Same shapes (the common case) need no broadcast shape computed.
  Tensor out = a.shape() == b.shape()
                   ? binary_kernel(K, a, b, a.shape())
                   : binary_kernel(K, a, b, broadcast_shapes(rule.name().c_str(), a, b));
  if constexpr (K == BinaryKind::kAdd) {  // sums of gradients keep their known zeros
    const Tensor::Zeros sum = Storage::sum_of(a.known_zeros(), b.known_zeros());
    if (sum != Tensor::Zeros::kUnknown) out.mark_zeros(sum);
  }
  return record(rule, {&a, &b}, std::move(out));
}

template <UnaryKind K>
Tensor unary_op(const KindRule<K>& rule, const Tensor& a) {
  check_defined(rule.name().c_str(), a, "input");
  return record(rule, {&a}, unary_kernel(K, a, 0.0));
}

template <UnaryKind K>
Tensor scalar_op(const KindRule<K>& rule, const Tensor& a, double scalar) {
  check_defined(rule.name().c_str(), a, "input");
  constexpr bool wrapped = K == UnaryKind::kAddScalar || K == UnaryKind::kMulScalar;
  return record(rule, {&a}, unary_kernel(K, a, scalar, wrapped),
                [scalar] { return ScalarAttrs{scalar}; });
}

// A comparison: its kernel, reported to a trace, never recorded (it has no derivative).
template <BinaryKind K>
Tensor comparison_op(const KindRule<K>& rule, const Tensor& a, const Tensor& b) {
  const char* name = rule.name().c_str();
  check_same_dtype_and_device(name, a, b);
  Tensor out = binary_kernel(K, a, b, broadcast_shapes(name, a, b));
  trace(rule, {&a, &b}, out);
  return out;
}

// Whether an activation's derivative keeps a gradient's known zeros (Note [Known zeros]): it
// writes the gradient or +0 (threshold_backward), or not (0 * (1 - result^2) is NaN for an Inf
// result).
constexpr bool zeros_give_zeros(BinaryKind kind) { return kind == BinaryKind::kThresholdBackward; }

// An activation's derivative as one kernel (threshold_backward, tanh_backward, sigmoid_backward):
// the incoming gradient and the activation's result, of one shape.
template <BinaryKind K>
Tensor fused_backward(const KindRule<K>& rule, const Tensor& grad, const Tensor& result) {
  const char* name = rule.name().c_str();
  check_same_dtype_and_device(name, grad, result);
  AG_CHECK(grad.shape() == result.shape(), name, ": gradient shape ", to_string(grad.shape()),
           " does not match result shape ", to_string(result.shape()));
  // All +0 is a fill, which reads nothing.
  const Tensor::Zeros zeros_in = zeros_give_zeros(K) ? grad.known_zeros() : Tensor::Zeros::kUnknown;
  if (zeros_in == Tensor::Zeros::kAll) {
    return record(rule, {&grad, &result}, zeros(grad.shape(), grad.dtype(), grad.device()));
  }
  Tensor out = binary_kernel(K, grad, result, grad.shape());
  if (zeros_in != Tensor::Zeros::kUnknown) out.mark_zeros(zeros_in);
  return record(rule, {&grad, &result}, std::move(out));
}

}  // namespace

const OpSpec& mul_inplace_spec() { return mul_inplace_rule; }
const OpSpec& scaled_product_spec() { return scaled_product_rule; }

Tensor add(const Tensor& a, const Tensor& b) { return binary_op(add_rule, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op(sub_rule, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(mul_rule, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op(div_rule, a, b); }
Tensor pow(const Tensor& base, const Tensor& exponent) {
  return binary_op(pow_rule, base, exponent);
}

Tensor maximum(const Tensor& a, const Tensor& b) { return binary_op(maximum_rule, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary_op(minimum_rule, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return comparison_op(eq_rule, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return comparison_op(gt_rule, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return comparison_op(ge_rule, a, b); }

Tensor add(const Tensor& a, double s) { return scalar_op(add_scalar_rule, a, s); }
Tensor mul(const Tensor& a, double s) { return scalar_op(mul_scalar_rule, a, s); }
Tensor pow(const Tensor& base, double exponent) {
  return scalar_op(pow_scalar_rule, base, exponent);
}
Tensor clamp_min(const Tensor& a, double min) { return scalar_op(clamp_min_rule, a, min); }
Tensor clamp_max(const Tensor& a, double max) { return scalar_op(clamp_max_rule, a, max); }

// neg, exp, log, tanh, ...: one per line of AG_PLAIN_UNARY_OPS, each running its rule, name_rule.
#define AG_PLAIN_UNARY_FUNCTION(Name, name, rule) \
  Tensor name(const Tensor& a) { return unary_op<UnaryKind::k##Name>(name##_rule, a); }
AG_PLAIN_UNARY_FUNCTIONS(AG_PLAIN_UNARY_FUNCTION)
#undef AG_PLAIN_UNARY_FUNCTION

Tensor threshold_backward(const Tensor& grad, const Tensor& result) {
  return fused_backward(threshold_backward_rule, grad, result);
}
Tensor tanh_backward(const Tensor& grad, const Tensor& result) {
  return fused_backward(tanh_backward_rule, grad, result);
}
Tensor sigmoid_backward(const Tensor& grad, const Tensor& result) {
  return fused_backward(sigmoid_backward_rule, grad, result);
}

}  // namespace ag::ops
