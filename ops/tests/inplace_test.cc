// In-place ops: each bumps the version counter shared by views and detach(), rebases the history
// of its target, and a saved tensor modified afterwards fails the version check by name.
#include <gtest/gtest.h>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/node.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_values;
using testing::leaf;

TEST(InPlace, EachOpBumpsTheSharedVersion) {
  Tensor a = ops::ones({2}, DType::kFloat64);
  Tensor view = ops::reshape(a, {2, 1});
  Tensor detached = ops::detach(a);
  ops::add_(a, ops::ones({2}, DType::kFloat64));
  ops::mul_(a, ops::full({1}, 3.0, DType::kFloat64));
  ops::copy_(view, ops::full({2, 1}, 5.0, DType::kFloat64));
  EXPECT_EQ(a.version(), 3u);
  EXPECT_EQ(view.version(), 3u);
  EXPECT_EQ(detached.version(), 3u);
  expect_values(detached, {5, 5});
}

TEST(InPlace, HistoryIsRebasedOntoTheInPlaceNode) {
  Tensor x = leaf({1, 2}, {2});
  Tensor w = leaf({3, 4}, {2});
  Tensor a = ops::mul(x, 2.0);
  ops::mul_(a, w);  // a = 2 x w
  EXPECT_EQ(a.grad_fn()->name(), "mul_");
  TensorList g = grad({ops::sum(a)}, {x, w});
  expect_values(g[0], {6, 8});
  expect_values(g[1], {2, 4});
}

TEST(InPlace, ModifyingASavedTensorFailsTheVersionCheck) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::exp(x);  // saves its result
  Tensor loss = ops::sum(y);
  ops::add_(y, ops::ones({2}, DType::kFloat64));
  try {
    backward(loss);
    ADD_FAILURE() << "expected a version-check error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("modified by an in-place operation"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'exp'"), std::string::npos) << msg;
  }
}

TEST(InPlace, CopyGivesTheSourceTheGradientAndTheOldValueNone) {
  Tensor x = leaf({1, 2}, {2});
  Tensor s = leaf({7}, {1});
  Tensor a = ops::mul(x, 1.0);
  ops::copy_(a, s);  // broadcasts [1] to [2]
  TensorList g = grad({ops::sum(a)}, {x, s});
  expect_values(g[0], {0, 0});
  expect_values(g[1], {2});
}

}  // namespace
}  // namespace ag
