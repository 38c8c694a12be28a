// Elementwise ops: forward kernels and derivative specs (Note [Derivative spec]).
#include "engine/error.h"
#include "ops/backend.h"
#include "ops/checks.h"
#include "ops/ops.h"
#include "ops/spec.h"

namespace ag::ops {
namespace {

Tensor binary_op(const OpSpec& spec, BinaryKind kind, const Tensor& a, const Tensor& b) {
  check_same_dtype_and_device(spec.name().c_str(), a, b);
  Backend& backend = backend_for(a.device());
  // Same shapes (the common case) need no broadcast shape computed.
  Tensor out = a.shape() == b.shape()
                   ? backend.binary(kind, a, b, a.shape())
                   : backend.binary(kind, a, b, broadcast_shapes(spec.name().c_str(), a, b));
  return record(spec, {&a, &b}, std::move(out));
}

Tensor unary_op(const OpSpec& spec, UnaryKind kind, const Tensor& a, double scalar = 0) {
  check_defined(spec.name().c_str(), a, "input");
  return record(spec, {&a}, backend_for(a.device()).unary(kind, a, scalar), [scalar] {
    OpAttrs attrs;
    attrs.scalar = scalar;
    return attrs;
  });
}

using Ctx = BackwardContext;
enum { kSelf = 0, kOther = 1, kResult = 2 };

const OpSpec kAdd("add", {},
                  {{"self", {}, [](const Ctx& c) { return c.grad(); }},
                   {"other", {}, [](const Ctx& c) { return c.grad(); }}});

const OpSpec kSub("sub", {},
                  {{"self", {}, [](const Ctx& c) { return c.grad(); }},
                   {"other", {}, [](const Ctx& c) { return neg(c.grad()); }}});

const OpSpec kMul("mul", {{"self", 0}, {"other", 1}},
                  {{"self", {kOther}, [](const Ctx& c) { return mul(c.grad(), c.saved(kOther)); }},
                   {"other", {kSelf}, [](const Ctx& c) { return mul(c.grad(), c.saved(kSelf)); }}});

const OpSpec kDiv("div", {{"self", 0}, {"other", 1}},
                  {{"self", {kOther}, [](const Ctx& c) { return div(c.grad(), c.saved(kOther)); }},
                   {"other", {kSelf, kOther}, [](const Ctx& c) {
                      Tensor other = c.saved(kOther);
                      return neg(div(mul(c.grad(), c.saved(kSelf)), mul(other, other)));
                    }}});

const OpSpec kPow("pow", {{"self", 0}, {"exponent", 1}, {"result", kFromResult}},
                  {{"self",
                    {kSelf, kOther},
                    [](const Ctx& c) {
                      Tensor e = c.saved(kOther);
                      return mul(c.grad(), mul(e, pow(c.saved(kSelf), add(e, -1.0))));
                    }},
                   {"exponent", {kSelf, kResult}, [](const Ctx& c) {
                      return mul(c.grad(), mul(c.saved(kResult), log(c.saved(kSelf))));
                    }}});

const OpSpec kAddScalar("add_scalar", {}, {{"self", {}, [](const Ctx& c) { return c.grad(); }}});

const OpSpec kMulScalar("mul_scalar", {}, {{"self", {}, [](const Ctx& c) {
                                              return mul(c.grad(), c.attrs().scalar);
                                            }}});

const OpSpec kPowScalar("pow_scalar", {{"self", 0}},
                        {{"self", {kSelf}, [](const Ctx& c) {
                            const double e = c.attrs().scalar;
                            // PyTorch: x^0 has gradient 0 everywhere, not 0 * 0^-1 = NaN at 0,
                            // and a constant one (no history under create_graph).
                            if (e == 0.0) return zeros_like(c.grad());
                            return mul(c.grad(), mul(pow(c.saved(kSelf), e - 1.0), e));
                          }}});

const OpSpec kNeg("neg", {}, {{"self", {}, [](const Ctx& c) { return neg(c.grad()); }}});

// For one-input ops the result is slot 0.
const OpSpec kExp("exp", {{"result", kFromResult}},
                  {{"self", {0}, [](const Ctx& c) { return mul(c.grad(), c.saved(0)); }}});

const OpSpec kLog("log", {{"self", 0}},
                  {{"self", {0}, [](const Ctx& c) { return div(c.grad(), c.saved(0)); }}});

const OpSpec kTanh("tanh", {{"result", kFromResult}},
                   {{"self", {0}, [](const Ctx& c) {
                       Tensor y = c.saved(0);
                       return mul(c.grad(), add(neg(mul(y, y)), 1.0));  // 1 - tanh^2
                     }}});

const OpSpec kSigmoid("sigmoid", {{"result", kFromResult}},
                      {{"self", {0}, [](const Ctx& c) {
                          Tensor y = c.saved(0);
                          return mul(c.grad(), mul(y, add(neg(y), 1.0)));  // y (1 - y)
                        }}});

const OpSpec kRelu("relu", {{"result", kFromResult}}, {{"self", {0}, [](const Ctx& c) {
                                                          return threshold_backward(c.grad(),
                                                                                    c.saved(0));
                                                        }}});

// relu's derivative, grad * (result > 0), as an op of its own (PyTorch's threshold_backward).
// Its derivative w.r.t. grad is the same mask; w.r.t. result it is zero, but recording that edge
// keeps a relu gradient connected to relu's input, so grad(grad(y, x), x) on a ReLU network
// returns (zero) gradients through the graph and a final backward reaches the weights, exactly
// as in PyTorch, instead of failing with "not reachable".
const OpSpec kThresholdBackward(
    "threshold_backward", {{"result", 1}},
    {{"grad", {0}, [](const Ctx& c) { return threshold_backward(c.grad(), c.saved(0)); }},
     {"result", {}, [](const Ctx& c) { return zeros_like(c.grad()); }}});

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary_op(kAdd, BinaryKind::kAdd, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op(kSub, BinaryKind::kSub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(kMul, BinaryKind::kMul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op(kDiv, BinaryKind::kDiv, a, b); }
Tensor pow(const Tensor& base, const Tensor& exponent) {
  return binary_op(kPow, BinaryKind::kPow, base, exponent);
}

Tensor add(const Tensor& a, double s) { return unary_op(kAddScalar, UnaryKind::kAddScalar, a, s); }
Tensor mul(const Tensor& a, double s) { return unary_op(kMulScalar, UnaryKind::kMulScalar, a, s); }
Tensor pow(const Tensor& base, double exponent) {
  return unary_op(kPowScalar, UnaryKind::kPowScalar, base, exponent);
}
Tensor neg(const Tensor& a) { return unary_op(kNeg, UnaryKind::kNeg, a); }
Tensor exp(const Tensor& a) { return unary_op(kExp, UnaryKind::kExp, a); }
Tensor log(const Tensor& a) { return unary_op(kLog, UnaryKind::kLog, a); }
Tensor tanh(const Tensor& a) { return unary_op(kTanh, UnaryKind::kTanh, a); }
Tensor sigmoid(const Tensor& a) { return unary_op(kSigmoid, UnaryKind::kSigmoid, a); }
Tensor relu(const Tensor& a) { return unary_op(kRelu, UnaryKind::kRelu, a); }

Tensor threshold_backward(const Tensor& grad, const Tensor& result) {
  check_same_dtype_and_device("threshold_backward", grad, result);
  AG_CHECK(grad.shape() == result.shape(), "threshold_backward: gradient shape ",
           to_string(grad.shape()), " does not match result shape ", to_string(result.shape()));
  Tensor out =
      backend_for(grad.device()).binary(BinaryKind::kThreshold, grad, result, grad.shape());
  return record(kThresholdBackward, {&grad, &result}, out);
}

}  // namespace ag::ops
