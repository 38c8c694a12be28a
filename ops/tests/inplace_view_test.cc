// Note [In-place ops on views]: an in-place op through a reshape view rebases the history of
// the view's base, and other views of that base pick the new history up before their next use,
// so gradients match PyTorch's (CopySlices) and finite differences.
#include <gtest/gtest.h>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/gradcheck.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_values;
using testing::leaf;
using testing::values;

TensorList grads(const Tensor& loss, const TensorList& inputs, bool retain_graph = false) {
  return grad({loss}, inputs, GradArgs().allow_unused().retain_graph(retain_graph));
}

// x = 2w; view(x) += y; loss = sum(x^2): dloss/dx = 2x = 2(2w + y).
TEST(InPlaceOnView, TheBaseSeesTheOp) {
  Tensor w = leaf({1, 2, 3, 4}, {2, 2});
  Tensor y = leaf({3, 3, 3, 3}, {4});
  Tensor x = ops::mul(w, 2.0);
  Tensor v = ops::reshape(x, {4});
  ops::add_(v, y);
  expect_values(x, {5, 7, 9, 11});
  const TensorList g = grads(ops::sum(ops::mul(x, x)), {w, y});
  expect_values(g[0], {20, 28, 36, 44});  // 2 * 2x
  expect_values(g[1], {10, 14, 18, 22});  // 2x, through the base
}

TEST(InPlaceOnView, ASiblingViewMadeBeforeTheOpSeesIt) {
  Tensor w = leaf({1, 2, 3, 4}, {2, 2});
  Tensor y = leaf({2, 2, 2, 2}, {4});
  Tensor x = ops::mul(w, 1.0);
  Tensor sibling = ops::reshape(x, {1, 4});  // made before the write
  Tensor v = ops::reshape(x, {4});
  ops::mul_(v, y);
  const TensorList g = grads(ops::sum(sibling), {w, y});
  expect_values(g[0], {2, 2, 2, 2});
  expect_values(g[1], {1, 2, 3, 4});  // the old values of x
}

TEST(InPlaceOnView, AViewSeesAWriteToItsBase) {
  Tensor w = leaf({1, 2}, {2});
  Tensor y = leaf({5, 7}, {2});
  Tensor x = ops::mul(w, 3.0);
  Tensor v = ops::reshape(x, {2, 1});
  ops::add_(x, y);
  const TensorList g = grads(ops::sum(ops::mul(v, v)), {w, y});
  expect_values(g[0], {6 * 8, 6 * 13});  // x = 3w + y = {8, 13}; d/dw = 3 * 2x
  expect_values(g[1], {16, 26});
}

TEST(InPlaceOnView, AViewOfAViewRebasesTheRootBase) {
  Tensor w = leaf({1, 2, 3, 4}, {4});
  Tensor y = leaf({1, 1, 1, 1}, {2, 2});
  Tensor x = ops::mul(w, 1.0);
  Tensor v = ops::reshape(x, {4, 1});
  Tensor u = ops::reshape(v, {2, 2});
  ops::copy_(u, y);  // x is now y: w no longer matters
  // Both calls go through the base's history and so through copy_'s node, which a call without
  // retain_graph frees (Note [Written through a view]; PyTorch's CopySlices raises there too).
  const TensorList g = grads(ops::sum(ops::mul(x, x)), {w, y}, /*retain_graph=*/true);
  expect_values(g[0], {0, 0, 0, 0});
  expect_values(g[1], {2, 2, 2, 2});
  const TensorList gv = grads(ops::sum(v), {w, y});  // the middle view, stale until used
  expect_values(gv[0], {0, 0, 0, 0});
  expect_values(gv[1], {1, 1, 1, 1});
}

TEST(InPlaceOnView, ABaseWithoutGradGetsAHistory) {
  Tensor x = ops::zeros({2, 2}, DType::kFloat64);
  Tensor y = leaf({1, 2, 3, 4}, {4});
  Tensor v = ops::reshape(x, {4});
  ASSERT_FALSE(x.requires_grad());
  ops::copy_(v, y);
  ASSERT_TRUE(x.requires_grad());
  const TensorList g = grads(ops::sum(ops::mul(x, x)), {y});
  expect_values(g[0], {2, 4, 6, 8});
}

TEST(InPlaceOnView, AViewOfALeafThatRequiresGradIsRefused) {
  Tensor w = leaf({1, 2}, {2});
  Tensor v = ops::reshape(w, {2, 1});
  try {
    ops::add_(v, ops::ones({2, 1}, DType::kFloat64));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("add_: ", 0), 0u) << what;
    EXPECT_NE(what.find("view of a leaf"), std::string::npos) << what;
  }
  expect_values(w, {1, 2});  // refused before writing
  // Without grad mode (an optimizer step) it is allowed, and w keeps its place in graphs.
  {
    NoGradGuard no_grad;
    ops::add_(v, ops::ones({2, 1}, DType::kFloat64));
  }
  expect_values(w, {2, 3});
  const TensorList g = grads(ops::sum(ops::mul(v, v)), {w});
  expect_values(g[0], {4, 6});
}

// PyTorch's CopySlices puts the write's gradient for the view's old value into the base's
// gradient at the view's elements, past the view's own history: an as_strided of a slice that
// reads an element beyond the slice (or beyond a slice of no elements, whose as_strided gradient
// is zeros) still gets it (fuzz --against pytorch, pin-write-through-as-strided-beyond-a-slice).
// b = x * 1 = [1, 2, 3]; b[1] *= y; loss = sum(b^2), b = [1, 10, 3]: db = 2b = [2, 20, 6].
TEST(InPlaceOnView, AWriteThroughAsStridedBeyondItsInputReachesTheBase) {
  for (const int64_t end : {1, 0}) {
    SCOPED_TRACE(end);
    Tensor x = leaf({1, 2, 3}, {3});
    Tensor y = leaf({5}, {});
    Tensor b = ops::mul(x, 1.0);
    Tensor v = ops::as_strided(ops::slice(b, 0, 0, end, 1), {}, {}, 1);
    ops::mul_(v, y);
    expect_values(b, {1, 10, 3});
    const TensorList g = grad({ops::sum(ops::mul(b, b))}, {x, y}, GradArgs().create_graph());
    expect_values(g[0], {2, 100, 6});  // 2b, times y at the written element
    expect_values(g[1], {40});         // 2b at the written element, times its old value
    EXPECT_TRUE(g[0].requires_grad());
    EXPECT_TRUE(g[1].requires_grad());
  }
}

// Note [Formulas in the incoming gradient]: out[:, t] = x[:, t] * w for each step t, as an RNN
// writes its outputs; each step's CopySlices zeroes its step in the incoming gradient itself when
// nobody else holds that gradient, and copies it otherwise (the caller's grad_outputs, a
// create_graph call), with the same gradients.
struct StepWrites {
  Tensor x = leaf({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 3, 2});
  Tensor w = leaf({0.5, -2}, {2});
  Tensor out = ops::zeros({2, 3, 2}, DType::kFloat64);
  StepWrites() {
    for (int64_t t = 0; t < 3; ++t) {
      Tensor slice = ops::select(out, 1, t);
      ops::copy_(slice, ops::mul(ops::select(x, 1, t), w));
    }
  }
};
const std::vector<double> kWeights = {1, -1, 2, 3, 0.5, 4, -2, 1, 1, 1, 3, -3};

TEST(InPlaceOnView, StepWritesZeroTheIncomingGradientInPlace) {
  StepWrites s;
  reset_counters();
  const TensorList g = grads(ops::sum(ops::mul(s.out, values(kWeights, {2, 3, 2}))), {s.x, s.w});
  // Every step but the first, whose base (zeros) needs no gradient: mul's gradient and each
  // CopySlices' are the engine's own.
  EXPECT_EQ(counters().formulas_in_place, 2);
  std::vector<double> dx(12), dw = {0, 0};
  for (size_t k = 0; k < 12; ++k) {
    dx[k] = kWeights[k] * (k % 2 == 0 ? 0.5 : -2);
    dw[k % 2] += kWeights[k] * static_cast<double>(k + 1);
  }
  expect_values(g[0], dx);
  expect_values(g[1], dw);
}

TEST(InPlaceOnView, StepWritesLeaveTheCallersGradientAlone) {
  StepWrites s;
  const Tensor weights = values(kWeights, {2, 3, 2});
  reset_counters();
  const TensorList g = grad({s.out}, {s.x, s.w}, GradArgs().grad_outputs({weights}));
  EXPECT_EQ(counters().formulas_in_place, 1);  // the last step's copies the caller's tensor
  expect_values(weights, kWeights, 0);         // unchanged
  StepWrites again;
  reset_counters();
  const TensorList h =
      grad({again.out}, {again.x, again.w}, GradArgs().grad_outputs({weights}).create_graph());
  EXPECT_EQ(counters().formulas_in_place, 0);  // under create_graph the formulas record
  EXPECT_EQ(g[0].to_vector(), h[0].to_vector());
  EXPECT_EQ(g[1].to_vector(), h[1].to_vector());
}

TEST(InPlaceOnView, GradientsMatchFiniteDifferences) {
  const auto fn = [](const TensorList& in) {
    Tensor x = ops::mul(in[0], in[0]);
    Tensor sibling = ops::reshape(x, {3, 2});
    Tensor v = ops::reshape(x, {6});
    ops::mul_(v, in[1]);
    ops::add_(sibling, in[2]);
    return ops::sum(ops::mul(ops::exp(x), in[0]));
  };
  const TensorList inputs = {leaf({0.1, -0.2, 0.3, 0.4, -0.5, 0.6}, {2, 3}),
                             leaf({1.5, -0.5, 0.25, 2.0, 1.0, -1.0}, {6}),
                             leaf({0.2, 0.1, -0.3, 0.05, 0.0, 0.7}, {3, 2})};
  const GradcheckResult first = gradcheck(fn, inputs);
  EXPECT_TRUE(first.passed) << first.report;
  const GradcheckResult second = gradgradcheck(fn, inputs);
  EXPECT_TRUE(second.passed) << second.report;
}

}  // namespace
}  // namespace ag
