// Note [Sums fused into formulas] (engine/engine.cc): an elementwise formula whose gradient meets
// one already waiting adds itself into it, only where nobody else can see the write, and only
// without create_graph. Values are checked against hand-derived derivatives and finite
// differences, and against the same calls with fuse_gradient_sums off.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/gradcheck.h"
#include "engine/options.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_values;
using testing::leaf;
using testing::values;

const std::vector<double> kX = {0.3, -1.2, 2.0, 0.0};
const std::vector<double> kW = {1.5, -0.5, 0.25, 2.0};
const std::vector<double> kV = {-1.0, 4.0, 0.5, 3.0};

// y = sum(tanh(x) * w) + sum(x * v): x * v is recorded last, so its node runs first and x's
// gradient v waits when tanh's formula runs.
Tensor tanh_then_mul(const Tensor& x) {
  Tensor first = ops::sum(ops::mul(ops::tanh(x), values(kW, {4})));
  Tensor second = ops::sum(ops::mul(x, values(kV, {4})));
  return ops::add(first, second);
}

// dy/dx = w * (1 - tanh(x)^2) + v, written out.
std::vector<double> tanh_then_mul_grad() {
  std::vector<double> g(kX.size());
  for (size_t i = 0; i < kX.size(); ++i) {
    const double t = std::tanh(kX[i]);
    g[i] = kW[i] * (1 - t * t) + kV[i];
  }
  return g;
}

TEST(FusedSums, TanhFormulaAddsIntoTheWaitingGradient) {
  TensorList grads[2];
  for (bool fuse : {false, true}) {
    OptionsGuard options(EngineOptions().with_fuse_gradient_sums(fuse));
    Tensor x = leaf(kX, {4});
    reset_counters();
    grads[fuse] = grad({tanh_then_mul(x)}, {x});
    EXPECT_EQ(counters().fused_sums, fuse ? 1 : 0);
    expect_values(grads[fuse][0], tanh_then_mul_grad());
  }
  EXPECT_EQ(grads[0][0].to_vector(), grads[1][0].to_vector());
}

TEST(FusedSums, BackwardIntoGradFusesToo) {
  Tensor x = leaf(kX, {4});
  reset_counters();
  backward(tanh_then_mul(x));
  EXPECT_EQ(counters().fused_sums, 1);
  expect_values(x.grad(), tanh_then_mul_grad());
}

// The waiting gradient is the caller's own tensor (a root's gradient for the leaf itself): the
// formula must not write into it.
TEST(FusedSums, LeavesAGradientThatTheCallerHolds) {
  Tensor x = leaf(kX, {4});
  Tensor t = ops::tanh(x);
  const Tensor gt = values(kW, {4});
  const Tensor gx = values(kV, {4});
  reset_counters();
  TensorList g = grad({t, x}, {x}, GradArgs().grad_outputs({gt, gx}));
  EXPECT_EQ(counters().fused_sums, 0);
  expect_values(gx, kV, 0);  // unchanged
  expect_values(g[0], tanh_then_mul_grad());
}

// Under create_graph the sum is a recorded add: nothing fuses, and the gradient has a history.
TEST(FusedSums, NothingFusesUnderCreateGraph) {
  Tensor x = leaf(kX, {4});
  reset_counters();
  TensorList g = grad({tanh_then_mul(x)}, {x}, GradArgs().create_graph());
  EXPECT_EQ(counters().fused_sums, 0);
  EXPECT_TRUE(g[0].requires_grad());
  expect_values(g[0], tanh_then_mul_grad());
}

// Note [View gradients into a waiting sum] (ops/view_ops.cc): rows and columns of x, each a
// view whose gradient is x-shaped, add their gradients into the one waiting for x at their own
// elements.
TEST(FusedSums, ViewGradientsAddAtTheirElements) {
  const std::vector<double> kA = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  TensorList grads[2];
  for (bool fuse : {false, true}) {
    OptionsGuard options(EngineOptions().with_fuse_gradient_sums(fuse));
    Tensor x = leaf(kA, {3, 4});
    Tensor y = ops::sum(ops::mul(x, x));  // recorded first: its gradient 2x arrives last
    for (int64_t r = 0; r < 3; ++r)
      y = ops::add(y, ops::sum(ops::mul(ops::select(x, 0, r), r + 1.0)));
    // Two column blocks, as narrows (split's one node gathers its outputs' gradients with a cat:
    // Note [Several views, one node], ops/split.cc).
    for (const Tensor& c : {ops::narrow(x, 1, 0, 3), ops::narrow(x, 1, 3, 1)})
      y = ops::add(y, ops::sum(ops::mul(c, -1.0)));
    y = ops::add(y, ops::sum(ops::diagonal(x)));
    reset_counters();
    grads[fuse] = grad({y}, {x});
    // Each view's gradient after the first meets one waiting: 3 rows, 2 column blocks, the
    // diagonal, less the first to arrive.
    EXPECT_EQ(counters().fused_sums, fuse ? 5 : 0);
    std::vector<double> expected(12);
    for (size_t k = 0; k < 12; ++k) {
      const size_t r = k / 4, c = k % 4;
      expected[k] = 2 * kA[k] + static_cast<double>(r + 1) - 1 + (r == c ? 1 : 0);
    }
    expect_values(grads[fuse][0], expected);
  }
  EXPECT_EQ(grads[0][0].to_vector(), grads[1][0].to_vector());
}

// The hessian's final backward: gradients of sum(d2y/dx2) for a two-layer tanh network w.r.t.
// its weights run tanh_backward's and scaled_product's formulas, whose gradients meet. Finite
// differences agree with the fused backward, and the fused and unfused ones agree to the bit.
Tensor second_derivative_sum(const TensorList& in) {
  const Tensor& x = in[0];
  Tensor h = ops::tanh(ops::mm(x, in[1]));
  Tensor y = ops::sum(ops::tanh(ops::mm(h, in[2])));
  Tensor y_x = grad({y}, {x}, GradArgs().create_graph())[0];
  Tensor y_xx = grad({ops::sum(y_x)}, {x}, GradArgs().create_graph())[0];
  return ops::sum(y_xx);
}

TEST(FusedSums, HessianFinalBackwardMatchesFiniteDifferences) {
  const Tensor x = leaf({0.5, -0.25, 1.0, 0.75, -1.5, 0.1}, {3, 2});
  const Tensor w1 = leaf({0.3, -0.7, 0.9, 0.2, 0.4, -0.6}, {2, 3});
  const Tensor w2 = leaf({0.8, -0.3, 0.5, 1.1, -0.9, 0.2}, {3, 2});
  reset_counters();
  const GradcheckResult check = gradcheck(second_derivative_sum, {x, w1, w2});
  EXPECT_TRUE(check.passed) << check.report;
  EXPECT_GT(counters().fused_sums, 0);

  TensorList grads[2];
  for (bool fuse : {false, true}) {
    OptionsGuard options(EngineOptions().with_fuse_gradient_sums(fuse));
    reset_counters();
    grads[fuse] = grad({second_derivative_sum({x, w1, w2})}, {x, w1, w2});
    EXPECT_EQ(counters().fused_sums > 0, fuse);
  }
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(grads[0][i].to_vector(), grads[1][i].to_vector());
}

}  // namespace
}  // namespace ag
