// Elementwise ops: forward kernels and derivative specs (Note [Derivative spec]).
#include "engine/counters.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "ops/backend.h"
#include "ops/checks.h"
#include "ops/fused.h"
#include "ops/op_list.h"
#include "ops/ops.h"
#include "ops/spec.h"

namespace ag::ops {
namespace {

// Each op's struct below names its kernel (kind) and its spec, whose name is the kind's name in
// the op list (Note [The op list]), so the two cannot disagree.
template <typename Op>
Tensor binary_op(const Tensor& a, const Tensor& b) {
  const OpSpec& spec = Op::spec;
  constexpr BinaryKind kind = Op::kind;
  check_same_dtype_and_device(spec.name().c_str(), a, b);
  Backend& backend = backend_for(a.device());
  // Same shapes (the common case) need no broadcast shape computed.
  Tensor out = a.shape() == b.shape()
                   ? backend.binary(kind, a, b, a.shape())
                   : backend.binary(kind, a, b, broadcast_shapes(spec.name().c_str(), a, b));
  if constexpr (kind == BinaryKind::kAdd) {  // sums of gradients keep their known zeros
    const Tensor::Zeros sum = Storage::sum_of(a.known_zeros(), b.known_zeros());
    if (sum != Tensor::Zeros::kUnknown) out.mark_zeros(sum);
  }
  return record(spec, {&a, &b}, std::move(out));
}

template <typename Op>
Tensor unary_op(const Tensor& a) {
  check_defined(Op::spec.name().c_str(), a, "input");
  return record(Op::spec, {&a}, backend_for(a.device()).unary(Op::kind, a, 0.0));
}

template <typename Op>
Tensor scalar_op(const Tensor& a, double scalar) {
  check_defined(Op::spec.name().c_str(), a, "input");
  return record(Op::spec, {&a}, backend_for(a.device()).unary(Op::kind, a, scalar),
                [scalar] { return ScalarAttrs{scalar}; });
}

// An activation's derivative as one kernel (threshold_backward, tanh_backward): the incoming
// gradient and the activation's result, of one shape.
template <typename Op>
Tensor fused_backward(const Tensor& grad, const Tensor& result) {
  const OpSpec& spec = Op::spec;
  const char* name = spec.name().c_str();
  check_same_dtype_and_device(name, grad, result);
  AG_CHECK(grad.shape() == result.shape(), name, ": gradient shape ", to_string(grad.shape()),
           " does not match result shape ", to_string(result.shape()));
  // An op that writes the gradient or +0 keeps a gradient's known zeros (Note [Known zeros]):
  // all +0 is a fill, which reads nothing.
  const Tensor::Zeros zeros_in =
      Op::zeros_give_zeros ? grad.known_zeros() : Tensor::Zeros::kUnknown;
  if (zeros_in == Tensor::Zeros::kAll) {
    return record(spec, {&grad, &result}, zeros(grad.shape(), grad.dtype(), grad.device()));
  }
  Tensor out = backend_for(grad.device()).binary(Op::kind, grad, result, grad.shape());
  if (zeros_in != Tensor::Zeros::kUnknown) out.mark_zeros(zeros_in);
  return record(spec, {&grad, &result}, std::move(out));
}

// scaled_product(a, b, c, scale) = a * ((b * scale) * c) (Note [Fused formula kernels],
// ops/fused.cc); every formula is the product of the gradient and the other two operands, scaled.
struct ScaledProduct {
  static constexpr Input a{0, "a"}, b{1, "b"}, c{2, "c"};
  static const OpSpec spec;
  static double scale(const Ctx& ctx) { return ctx.attrs<ScalarAttrs>().scalar; }
};
const OpSpec ScaledProduct::spec{
    "scaled_product",
    {{a,
      {b, c},
      [](const Ctx& x) { return scaled_product(x.grad(), x[b], x[c], scale(x)); },
      [](const Tensor& sum, const Ctx& x) {
        return add_scaled_product_into(sum, x.grad(), x[b], x[c], scale(x));
      }},
     {b,
      {a, c},
      [](const Ctx& x) { return scaled_product(x.grad(), x[a], x[c], scale(x)); },
      [](const Tensor& sum, const Ctx& x) {
        return add_scaled_product_into(sum, x.grad(), x[a], x[c], scale(x));
      }},
     {c,
      {a, b},
      [](const Ctx& x) { return scaled_product(x.grad(), x[a], x[b], scale(x)); },
      [](const Tensor& sum, const Ctx& x) {
        return add_scaled_product_into(sum, x.grad(), x[a], x[b], scale(x));
      }}},
    {AliasKind::kPure, ScalarAttrs{0.0},
     [](const OpArgs& x) {
       return scaled_product(x[a], x[b], x[c], x.attrs<ScalarAttrs>().scalar);
     },
     [](const Tensor& sum, const OpArgs& x) {
       return add_scaled_product_into(sum, x[a], x[b], x[c], x.attrs<ScalarAttrs>().scalar);
     }}};

// The derivatives, one struct per op: its inputs and result as named slots, then one formula
// per input (Note [Derivative spec]). Binary ops: add(self, other) and the like.
struct Binary {
  static constexpr Input self{0, "self"}, other{1, "other"};
};
// Unary ops and ops with a scalar: exp(self) and the like.
struct Unary {
  static constexpr Input self{0, "self"};
  static constexpr Result result{};
};

struct Add : Binary {
  static constexpr BinaryKind kind = BinaryKind::kAdd;
  static const OpSpec spec;
};
const OpSpec Add::spec{kind_name(kind),
                       {{self, {}, [](const Ctx& c) { return c.grad(); }},
                        {other, {}, [](const Ctx& c) { return c.grad(); }}},
                       binary_forward<add>()};

struct Sub : Binary {
  static constexpr BinaryKind kind = BinaryKind::kSub;
  static const OpSpec spec;
};
const OpSpec Sub::spec{kind_name(kind),
                       {{self, {}, [](const Ctx& c) { return c.grad(); }},
                        {other, {}, [](const Ctx& c) { return -c.grad(); }}},
                       binary_forward<sub>()};

struct Mul : Binary {
  static constexpr BinaryKind kind = BinaryKind::kMul;
  static const OpSpec spec;
};
const OpSpec Mul::spec{kind_name(kind),
                       {{self, {other}, [](const Ctx& c) { return c.grad() * c[other]; }},
                        {other, {self}, [](const Ctx& c) { return c.grad() * c[self]; }}},
                       binary_forward<mul>()};

// mul_(self, other): mul's formulas, asked, not restated (Note [In-place saves]). Defined here,
// after Mul::spec, so that it is built after it.
const OpSpec mul_inplace{op_name(OpId::kMulInplace), Mul::spec, in_place_forward<mul_>()};

struct Div : Binary {
  static constexpr BinaryKind kind = BinaryKind::kDiv;
  static const OpSpec spec;
};
const OpSpec Div::spec{kind_name(kind),
                       {{self, {other}, [](const Ctx& c) { return c.grad() / c[other]; }},
                        {other,
                         {self, other},
                         // PyTorch's div_tensor_other_backward, in its order: the product
                         // under create_graph reads (self / other) / other, not self.
                         [](const Ctx& c) { return -c.grad() * (c[self] / c[other] / c[other]); }}},
                       binary_forward<div>()};

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

// pow(self, exponent) = result
struct Pow {
  static constexpr Input self{0, "self"}, exponent{1, "exponent"};
  static constexpr Result result{};
  static constexpr BinaryKind kind = BinaryKind::kPow;
  static const OpSpec spec;
};
const OpSpec Pow::spec{
    kind_name(kind),
    // Note [pow's gradients select]
    {{self,
      {self, exponent},
      [](const Ctx& c) { return pow_backward_self(c.grad(), c[self], c[exponent]); }},
     {exponent,
      {self, exponent, result},
      [](const Ctx& c) {
        return pow_backward_exponent(c.grad(), c[self], c[exponent], c[result]);
      }}},
    binary_forward<pow>()};

struct AddScalar : Unary {
  static constexpr UnaryKind kind = UnaryKind::kAddScalar;
  static const OpSpec spec;
};
const OpSpec AddScalar::spec{
    kind_name(kind), {{self, {}, [](const Ctx& c) { return c.grad(); }}}, scalar_forward<add>()};

struct MulScalar : Unary {
  static constexpr UnaryKind kind = UnaryKind::kMulScalar;
  static const OpSpec spec;
};
const OpSpec MulScalar::spec{
    kind_name(kind),
    {{self, {}, [](const Ctx& c) { return c.grad() * c.attrs<ScalarAttrs>().scalar; }}},
    scalar_forward<mul>()};

struct PowScalar : Unary {
  static constexpr UnaryKind kind = UnaryKind::kPowScalar;
  static const OpSpec spec;
};
const OpSpec PowScalar::spec{kind_name(kind),
                             {{self,
                               {self},
                               [](const Ctx& c) {
                                 const double e = c.attrs<ScalarAttrs>().scalar;
                                 // PyTorch: x^0 has gradient 0 everywhere (not
                                 // 0 * 0^-1 = NaN at 0), a constant: no history.
                                 if (e == 0.0) return zeros_like(c.grad());
                                 return c.grad() * (e * pow(c[self], e - 1.0));
                               }}},
                             scalar_forward<pow>()};

struct Neg : Unary {
  static constexpr UnaryKind kind = UnaryKind::kNeg;
  static const OpSpec spec;
};
const OpSpec Neg::spec{
    kind_name(kind), {{self, {}, [](const Ctx& c) { return -c.grad(); }}}, unary_forward<neg>()};

struct Exp : Unary {
  static constexpr UnaryKind kind = UnaryKind::kExp;
  static const OpSpec spec;
};
const OpSpec Exp::spec{kind_name(kind),
                       {{self, {result}, [](const Ctx& c) { return c.grad() * c[result]; }}},
                       unary_forward<exp>()};

struct Log : Unary {
  static constexpr UnaryKind kind = UnaryKind::kLog;
  static const OpSpec spec;
};
const OpSpec Log::spec{kind_name(kind),
                       {{self, {self}, [](const Ctx& c) { return c.grad() / c[self]; }}},
                       unary_forward<log>()};

struct Tanh : Unary {
  static constexpr UnaryKind kind = UnaryKind::kTanh;
  static const OpSpec spec;
};
const OpSpec Tanh::spec{kind_name(kind),
                        {{self,
                          {result},
                          [](const Ctx& c) { return tanh_backward(c.grad(), c[result]); },
                          [](const Tensor& sum, const Ctx& c) {
                            return add_tanh_backward_into(sum, c.grad(), c[result]);
                          }}},
                        unary_forward<tanh>()};

struct Sigmoid : Unary {
  static constexpr UnaryKind kind = UnaryKind::kSigmoid;
  static const OpSpec spec;
};
const OpSpec Sigmoid::spec{
    kind_name(kind),
    {{self, {result}, [](const Ctx& c) { return c.grad() * (c[result] * (1.0 - c[result])); }}},
    unary_forward<sigmoid>()};

struct Relu : Unary {
  static constexpr UnaryKind kind = UnaryKind::kRelu;
  static const OpSpec spec;
};
const OpSpec Relu::spec{
    kind_name(kind),
    {{self, {result}, [](const Ctx& c) { return threshold_backward(c.grad(), c[result]); }}},
    unary_forward<relu>()};

// relu's derivative, grad * (result > 0), as an op of its own (PyTorch's threshold_backward).
// Its derivative w.r.t. grad is the same mask; w.r.t. result it is zero, but recording that edge
// keeps a relu gradient connected to relu's input, so grad(grad(y, x), x) on a ReLU network
// returns (zero) gradients through the graph and a final backward reaches the weights, exactly
// as in PyTorch, instead of failing with "not reachable".
struct ThresholdBackward {
  static constexpr Input grad{0, "grad"}, result{1, "result"};
  static constexpr BinaryKind kind = BinaryKind::kThreshold;
  static constexpr bool zeros_give_zeros = true;  // result > 0 ? grad : +0
  static const OpSpec spec;
};
const OpSpec ThresholdBackward::spec{
    kind_name(kind),
    {{grad, {result}, [](const Ctx& c) { return threshold_backward(c.grad(), c[result]); }},
     {result, {}, [](const Ctx& c) { return zeros_like(c.grad()); }}},
    binary_forward<threshold_backward>()};

// tanh's derivative, grad * (1 - result^2), as an op of its own (PyTorch's tanh_backward): one
// kernel instead of three, and its own derivatives (as in derivatives.yaml) where the inlined
// formula's graph would record three nodes, five formulas and a gradient sum under create_graph.
struct TanhBackward {
  static constexpr Input grad{0, "grad"}, result{1, "result"};
  static constexpr BinaryKind kind = BinaryKind::kTanhBackward;
  static constexpr bool zeros_give_zeros = false;  // 0 * (1 - result^2) is NaN for an Inf result
  static const OpSpec spec;
};
const OpSpec TanhBackward::spec{
    kind_name(kind),
    {{grad,
      {result},
      [](const Ctx& c) { return tanh_backward(c.grad(), c[result]); },
      [](const Tensor& sum, const Ctx& c) {
        return add_tanh_backward_into(sum, c.grad(), c[result]);
      }},
     {result,
      {grad, result},
      [](const Ctx& c) { return scaled_product(c.grad(), c[result], c[grad], -2.0); },
      [](const Tensor& sum, const Ctx& c) {
        return add_scaled_product_into(sum, c.grad(), c[result], c[grad], -2.0);
      }}},
    {AliasKind::kPure, NoAttrs(), [](const OpArgs& x) { return tanh_backward(x[grad], x[result]); },
     [](const Tensor& sum, const OpArgs& x) {
       return add_tanh_backward_into(sum, x[grad], x[result]);
     }}};

}  // namespace

const OpSpec& mul_inplace_spec() { return mul_inplace; }
const OpSpec& scaled_product_spec() { return ScaledProduct::spec; }

Tensor add(const Tensor& a, const Tensor& b) { return binary_op<Add>(a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op<Sub>(a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op<Mul>(a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op<Div>(a, b); }
Tensor pow(const Tensor& base, const Tensor& exponent) { return binary_op<Pow>(base, exponent); }

Tensor add(const Tensor& a, double s) { return scalar_op<AddScalar>(a, s); }
Tensor mul(const Tensor& a, double s) { return scalar_op<MulScalar>(a, s); }
Tensor pow(const Tensor& base, double exponent) { return scalar_op<PowScalar>(base, exponent); }
Tensor neg(const Tensor& a) { return unary_op<Neg>(a); }
Tensor exp(const Tensor& a) { return unary_op<Exp>(a); }
Tensor log(const Tensor& a) { return unary_op<Log>(a); }
Tensor tanh(const Tensor& a) { return unary_op<Tanh>(a); }
Tensor sigmoid(const Tensor& a) { return unary_op<Sigmoid>(a); }
Tensor relu(const Tensor& a) { return unary_op<Relu>(a); }

Tensor threshold_backward(const Tensor& grad, const Tensor& result) {
  return fused_backward<ThresholdBackward>(grad, result);
}
Tensor tanh_backward(const Tensor& grad, const Tensor& result) {
  return fused_backward<TanhBackward>(grad, result);
}

}  // namespace ag::ops
