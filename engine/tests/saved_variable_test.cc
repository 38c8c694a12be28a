#include "engine/saved_variable.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/memory/allocator.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::error_of;
using testing::expect_values;
using testing::leaf;

TEST(SavedVariable, InPlaceChangeOfASavedTensorFailsBackwardNamingTheOp) {
  Tensor x = leaf({1, 2}, {2});
  Tensor h = ops::add(x, 1.0);
  Tensor y = ops::sum(ops::mul(h, h));  // mul saves h
  ops::add_(h, ops::ones({2}, DType::kFloat64));
  std::string msg = error_of([&] { backward(y); });
  EXPECT_NE(msg.find("modified by an in-place operation"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'mul'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2]"), std::string::npos) << msg;
}

TEST(SavedVariable, SavedOutputsDoNotFormReferenceCycles) {
  std::weak_ptr<Node> node;
  const int64_t base = live_bytes();
  {
    Tensor x = leaf({1, 2}, {2});
    Tensor y = ops::exp(x);  // exp saves its own result
    node = y.grad_fn();
    ASSERT_FALSE(node.expired());
  }
  EXPECT_TRUE(node.expired());
  EXPECT_EQ(live_bytes(), base);
}

TEST(SavedVariable, SavedOutputIsReattachedForDoubleBackward) {
  Tensor x = leaf({0.5}, {1});
  Tensor y = ops::exp(x);
  Tensor g = grad({y}, {x}, GradArgs().create_graph())[0];
  Tensor gg = grad({g}, {x})[0];  // d/dx exp(x) = exp(x)
  expect_values(gg, {std::exp(0.5)});
}

TEST(SavedVariable, ReleasedAfterBackwardUnlessRetained) {
  Tensor x = leaf({3}, {1});
  Tensor y = ops::mul(x, x);
  backward(TensorList{y}, BackwardArgs().retain_graph());
  expect_values(x.grad(), {6});
  backward(y);  // allowed: the graph was retained
  expect_values(x.grad(), {12});
  std::string msg = error_of([&] { backward(y); });
  EXPECT_NE(msg.find("backward through the graph a second time"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'mul'"), std::string::npos) << msg;
  expect_values(x.grad(), {12});  // the failed call changed nothing
}

TEST(SavedVariable, ReleaseFreesTheSavedBytes) {
  Tensor x = leaf(std::vector<double>(100, 1.0), {100});
  const int64_t base = live_bytes();
  Tensor y = ops::sum(ops::exp(ops::mul(x, 2.0)));  // exp's result is saved: 800 bytes live
  EXPECT_EQ(live_bytes(), base + 800 + 8);
  backward(y);
  EXPECT_EQ(live_bytes(), base + 8 + 800);  // y (8 bytes) + x.grad (800)
}

}  // namespace
// Note [Saved values detached in place], against PyTorch 2.15:
// x = tensor([1., 2.], requires_grad=True); a = x * 2; y = a.pow(2); a.detach_()
// y.sum().backward()  -> "Trying to use a saved tensor that has been detached in-place"
//   (also after a write into a under no_grad, which the version check would otherwise name)
// z = x.exp(); y = z.sum(); z.detach_(); y.backward()  -> x.grad = exp(x): a saved output is fine
TEST(SavedVariable, AnInputDetachedInPlaceIsRefusedAnOutputIsNot) {
  const Tensor x = leaf({1, 2}, {2});
  Tensor a = ops::mul(x, 2.0);
  const Tensor y = ops::pow(a, 2.0);
  a.detach_();
  EXPECT_NE(error_of([&] {
              backward(ops::sum(y));
            }).find("Trying to use a saved tensor that has been detached in-place"),
            std::string::npos);
  Tensor b = ops::mul(x, 2.0);
  const Tensor w = ops::pow(b, 2.0);
  b.detach_();
  {
    NoGradGuard no_grad;
    ops::add_(b, ops::ones_like(b));
  }
  EXPECT_NE(error_of([&] { backward(ops::sum(w)); }).find("detached in-place"), std::string::npos);
  Tensor z = ops::exp(x);
  const Tensor s = ops::sum(z);
  z.detach_();
  backward(s);
  expect_values(x.grad(), {std::exp(1.0), std::exp(2.0)});
}

}  // namespace ag
