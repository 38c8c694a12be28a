// Note [In-place ops on views]: an in-place op through a reshape view rebases the history of
// the view's base, and other views of that base pick the new history up before their next use,
// so gradients match PyTorch's (CopySlices) and finite differences.
#include <gtest/gtest.h>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/gradcheck.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_values;
using testing::leaf;

TensorList grads(const Tensor& loss, const TensorList& inputs) {
  return grad({loss}, inputs, GradArgs().allow_unused());
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
  const TensorList g = grads(ops::sum(ops::mul(x, x)), {w, y});
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
