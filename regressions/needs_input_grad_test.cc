// Seed 001 (issue 56500): the Mul and Pow custom Functions from the issue. With the per-call
// view, a Function's backward knows which gradients *this* call needs.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/function.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_values;
using testing::leaf;

// How often each formula ran (the "Calculating grad_..." prints).
thread_local int mul_inp1 = 0, mul_inp2 = 0, pow_base = 0, pow_exponent = 0;

struct Mul : Function<Mul> {
  static constexpr const char* name = "Mul";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    ctx.save_for_backward({in[0], in[1]});
    return {ops::mul(in[0], in[1])};
  }
  static TensorList backward(BackwardCtx& ctx, const TensorList& g) {
    TensorList s = ctx.saved_tensors();
    TensorList out(2);
    if (ctx.needs_input_grad(0)) ++mul_inp1, out[0] = ops::mul(g[0], s[1]);
    if (ctx.needs_input_grad(1)) ++mul_inp2, out[1] = ops::mul(g[0], s[0]);
    return out;
  }
};

struct Pow : Function<Pow> {
  static constexpr const char* name = "Pow";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    Tensor out = ops::pow(in[0], in[1]);
    ctx.save_for_backward({in[0], in[1], out});
    return {out};
  }
  static TensorList backward(BackwardCtx& ctx, const TensorList& g) {
    TensorList s = ctx.saved_tensors();  // base, exponent, out
    TensorList out(2);
    if (ctx.needs_input_grad(0)) {
      ++pow_base;
      out[0] = ops::div(ops::mul(ops::mul(g[0], s[1]), s[2]), s[0]);
    }
    if (ctx.needs_input_grad(1)) {
      ++pow_exponent;
      out[1] = ops::mul(ops::mul(g[0], s[2]), ops::log(s[0]));
    }
    return out;
  }
};

void reset() { mul_inp1 = mul_inp2 = pow_base = pow_exponent = 0; }

TEST(NeedsInputGrad, MulComputesOnlyTheRequestedGradient) {
  Tensor a = leaf({1.0}, {1});
  Tensor b = leaf({2.0}, {1});
  Tensor out = Mul::apply({a, b})[0];
  reset();
  Tensor ga = grad({out}, {a}, GradArgs().retain_graph().create_graph())[0];
  expect_values(ga, {2.0});
  EXPECT_EQ(mul_inp1, 1);
  EXPECT_EQ(mul_inp2, 0);

  reset();
  grad({out}, {a},
       GradArgs().retain_graph().create_graph().engine_options(
           EngineOptions().with_per_call_needs_input_grad(false)));
  EXPECT_EQ(mul_inp1, 1);
  EXPECT_EQ(mul_inp2, 1);  // the old behaviour: needs_input_grad == requires_grad
}

TEST(NeedsInputGrad, PowSecondCallSkipsTheExponentFormula) {
  for (bool per_call : {true, false}) {
    EngineOptions options;
    options.per_call_needs_input_grad = per_call;
    Tensor base = leaf({1.5}, {1});
    Tensor exponent = leaf({2.0}, {1});
    Tensor out = Pow::apply({base, exponent})[0];
    reset();
    Tensor gp = grad({out}, {exponent}, GradArgs().create_graph().engine_options(options))[0];
    expect_values(gp, {std::pow(1.5, 2.0) * std::log(1.5)});
    EXPECT_EQ(pow_exponent, 1);
    EXPECT_EQ(pow_base, per_call ? 0 : 1);

    reset();
    // d/dbase (out * log(base)) = exponent * base^(e-1) * log(base) + out / base
    Tensor gbgp = grad({gp}, {base}, GradArgs().create_graph().engine_options(options))[0];
    expect_values(gbgp, {2.0 * 1.5 * std::log(1.5) + 2.25 / 1.5}, 1e-12);
    EXPECT_EQ(pow_base, 1);
    EXPECT_EQ(pow_exponent, per_call ? 0 : 1) << "per_call " << per_call;
  }
}

TEST(NeedsInputGrad, ForwardSeesRequiresGrad) {
  struct Probe : Function<Probe> {
    static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
      EXPECT_TRUE(ctx.needs_input_grad(0));
      EXPECT_FALSE(ctx.needs_input_grad(1));
      return {ops::add(in[0], in[1])};
    }
    static TensorList backward(BackwardCtx&, const TensorList& g) { return {g[0], g[0]}; }
  };
  Probe::apply({leaf({1}, {1}), leaf({1}, {1}, false)});
}

}  // namespace
}  // namespace ag
