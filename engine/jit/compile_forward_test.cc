// Note [Compiled functions] (compile.h) with forward mode inside the traced function: a jvp rule's
// tangent is computed by ops (Note [Jvp rules], ops/jvp.h), so the trace records it like any other
// value, and forward-over-reverse compiles as nested grads do. Each compiled result is checked
// against an independent computation on other inputs than the example's.
#include <gtest/gtest.h>

#include <vector>

#include "engine/autograd.h"
#include "engine/forward_ad.h"
#include "engine/functional.h"
#include "engine/jit/compile.h"
#include "ops/ops.h"

namespace ag::jit {
namespace {

Tensor leaf(const Shape& shape, uint64_t seed) {
  Tensor t = ops::uniform(shape, -1, 1, seed, DType::kFloat64);
  t.set_requires_grad(true);
  return t;
}

void expect_close(const TensorList& got, const TensorList& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const std::vector<double> g = got[i].to_vector(), w = want[i].to_vector();
    ASSERT_EQ(g.size(), w.size()) << "output " << i;
    for (size_t k = 0; k < g.size(); ++k) EXPECT_NEAR(g[k], w[k], 1e-12) << i << "[" << k << "]";
  }
}

// Inputs {x, w1, b1, w2, b2} of a two-layer MLP with one output per sample, as seed 001's.
TensorList mlp_inputs(uint64_t seed) {
  return {ops::uniform({5, 3}, -1, 1, seed, DType::kFloat64), leaf({4, 3}, seed + 1),
          leaf({4}, seed + 2), leaf({1, 4}, seed + 3), leaf({1}, seed + 4)};
}

// Tanh or sigmoid: activations with a second derivative, so that y_xx and its gradients are not
// zeros.
Tensor mlp(const TensorList& in, const Tensor& x, bool tanh) {
  const Tensor h = ops::linear(x, in[1], in[2]);
  return ops::linear(tanh ? ops::tanh(h) : ops::sigmoid(h), in[3], in[4]);
}

// y_xx = H 1 per sample and the weights' gradients of sum(y_xx): forward-over-reverse (x carries
// the tangent ones, the gradient's tangent is y_xx), or two nested grads.
TensorList forward_over_reverse(const TensorList& in, bool tanh) {
  DualLevel level;
  Tensor primal = ops::clone(in[0]);
  primal.set_requires_grad(true);
  const Tensor x = make_dual(primal, ops::ones_like(primal));
  const Tensor y = mlp(in, x, tanh);
  const Tensor y_x = grad({y}, {x}, GradArgs().grad_outputs({ops::ones_like(y)}).create_graph())[0];
  const Tensor y_xx = unpack_dual(y_x).tangent;
  TensorList out = grad({ops::sum(y_xx)}, {in[1], in[2], in[3]});
  out.insert(out.begin(), y_xx);
  return out;
}

TensorList nested_grads(const TensorList& in, bool tanh) {
  Tensor x = ops::clone(in[0]);
  x.set_requires_grad(true);
  const Tensor y = mlp(in, x, tanh);
  const Tensor y_x = grad({y}, {x}, GradArgs().grad_outputs({ops::ones_like(y)}).create_graph())[0];
  const Tensor y_xx =
      grad({y_x}, {x}, GradArgs().grad_outputs({ops::ones_like(y_x)}).create_graph())[0];
  TensorList out = grad({ops::sum(y_xx)}, {in[1], in[2], in[3]});
  out.insert(out.begin(), y_xx);
  return out;
}

TEST(CompiledForwardMode, EagerForwardOverReverseMatchesNestedGrads) {
  for (const bool tanh : {false, true}) {
    SCOPED_TRACE(tanh ? "tanh" : "sigmoid");
    const TensorList in = mlp_inputs(11);
    expect_close(forward_over_reverse(in, tanh), nested_grads(in, tanh));
  }
}

TEST(CompiledForwardMode, ForwardOverReverseMatchesNestedGrads) {
  for (const bool tanh : {false, true}) {
    CompiledFunction compiled(
        [tanh](const TensorList& in) { return forward_over_reverse(in, tanh); }, mlp_inputs(1));
    for (const uint64_t seed : {11, 21}) {
      const TensorList in = mlp_inputs(seed);
      SCOPED_TRACE(tanh ? "tanh" : "sigmoid");
      expect_close(compiled(in), nested_grads(in, tanh));
    }
  }
}

// jvp, vjp and hvp of f(x, W) = sum(tanh(W x)): the tangents and cotangents the transforms make
// are constants of the trace, and the results follow the inputs. (jacfwd and jacrev assemble
// their rows with stack, which the JIT does not trace: Note [Variadic ops].)
TEST(CompiledForwardMode, TransformsTraceAsTheirOps) {
  const func::Function f = [](const TensorList& in) {
    return TensorList{ops::sum(ops::tanh(ops::mm(in[1], in[0])))};
  };
  const CompiledFunction::Function transforms = [&f](const TensorList& in) {
    const func::JvpResult r = func::jvp(f, {in[0], in[1]}, {in[2], ops::zeros_like(in[1])});
    const func::Function of_x = [&](const TensorList& x) { return f({x[0], in[1]}); };
    return TensorList{r.outputs[0], r.tangents[0], func::vjp(f, {in[0], in[1]}).vjp({in[3]})[0],
                      func::hvp(of_x, in[0], in[2])};
  };
  const auto inputs = [](uint64_t seed) {
    return TensorList{ops::uniform({3, 1}, -1, 1, seed, DType::kFloat64),
                      ops::uniform({2, 3}, -1, 1, seed + 1, DType::kFloat64),
                      ops::uniform({3, 1}, -1, 1, seed + 2, DType::kFloat64),
                      ops::uniform({}, -1, 1, seed + 3, DType::kFloat64)};
  };
  CompiledFunction compiled(transforms, inputs(1));
  const TensorList in = inputs(31);
  // The reference, by hand: y = tanh(W x), s = 1 - y^2; d sum(y) = <s, W dx>; the gradient in x
  // is W^T s; the Hessian-vector product is W^T (-2 y s (W v)).
  const Tensor wt = ops::transpose(in[1], 0, 1);
  const Tensor y = ops::tanh(ops::mm(in[1], in[0]));
  const Tensor s = ops::sub(ops::ones_like(y), ops::mul(y, y));
  const Tensor hv = ops::mm(wt, ops::mul(ops::mul(ops::mul(y, s), -2.0), ops::mm(in[1], in[2])));
  expect_close(compiled(in), {ops::sum(y), ops::sum(ops::mul(s, ops::mm(in[1], in[2]))),
                              ops::mul(ops::mm(wt, s), in[3]), hv});
}

}  // namespace
}  // namespace ag::jit
