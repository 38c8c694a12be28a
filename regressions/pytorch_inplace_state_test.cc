// In-place changes of autograd state, pinned to PyTorch 2.15 (float64): Tensor::detach_(), which
// views refuse; matmul's broadcast operand, saved as the expand view PyTorch saves, so that a
// write into the operand fails backward's version check; and the split outputs whose base was
// written (Note [How a view was made], ops/views.h). The values and messages are those that
// regressions/pytorch_inplace_state_goldens.py prints; the comments give its programs.
#include <gtest/gtest.h>

#include <string>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/node.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::leaf;
using testing::values;

const char* const kDetachView = "views can't be detached in place; use detach() instead";

// --- detach_ (issue 44, point 7) --------------------------------------------------------------

// a = x * 2; r = a.detach_(): r is a, a.requires_grad False, a.grad_fn None, a.is_leaf True,
// a._version 0. x.detach_() on a leaf: x.requires_grad False, x.is_leaf True.
TEST(DetachInPlace, MakesALeafThatDoesNotRequireGrad) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = ops::mul(x, 2.0);
  Tensor& r = a.detach_();
  EXPECT_TRUE(r.is_same(a));
  EXPECT_FALSE(a.requires_grad());
  EXPECT_EQ(a.grad_fn(), nullptr);
  EXPECT_TRUE(a.is_leaf());
  EXPECT_EQ(a.version(), 0u);
  x.detach_();
  EXPECT_FALSE(x.requires_grad());
  EXPECT_TRUE(x.is_leaf());
}

// (x * 2)[1:3].detach_(), tensor([1., 2., 3., 4.])[1:3].detach_(), a view of x made under
// no_grad, and x[1:3].detach_() under no_grad all raise "Can't detach views in-place. Use
// detach() instead."; so does a custom Function's output (a view: regressions/
// pytorch_custom_function_test). matmul's result is not a view: y.detach_() runs.
TEST(DetachInPlace, ViewsAreRefused) {
  Tensor x = leaf({1, 2, 3, 4}, {4});
  Tensor v = ops::slice(ops::mul(x, 2.0), 0, 1, 3);
  expect_error([&] { v.detach_(); }, {"detach_", kDetachView});
  EXPECT_TRUE(v.requires_grad());
  Tensor c = ops::slice(values({1, 2, 3, 4}, {4}), 0, 1, 3);
  expect_error([&] { c.detach_(); }, {"detach_", kDetachView});
  Tensor n;
  {
    NoGradGuard no_grad;
    n = ops::slice(x, 0, 1, 3);
    Tensor u = ops::slice(x, 0, 1, 3);
    expect_error([&] { u.detach_(); }, {"detach_", kDetachView});
  }
  expect_error([&] { n.detach_(); }, {"detach_", kDetachView});
  Tensor b = values({1, 0, 0, 1, 2, 1, 1, 2}, {2, 2, 2});
  Tensor y = ops::matmul(leaf({1, 2, 3, 4}, {2, 2}), b);
  EXPECT_FALSE(y.is_view());
  EXPECT_FALSE(y.detach_().requires_grad());
}

// a = x * 2; b = a * 3; a.detach_(): grad(b.sum(), x) = [6, 6] (graphs built from a keep it).
// a = x * 2; v = a[1:3]; a.detach_(): v.requires_grad True, v.grad_fn SliceBackward0, v.is_leaf
// False, grad(v.sum(), x) = [0, 2, 2, 0]; after a.mul_(2): v.requires_grad True, v.grad_fn
// AsStridedBackward0, v.is_leaf False.
TEST(DetachInPlace, GraphsAndViewsBuiltBeforeKeepTheirHistory) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = ops::mul(x, 2.0);
  Tensor b = ops::mul(a, 3.0);
  a.detach_();
  expect_values(grad({ops::sum(b)}, {x})[0], {6, 6});

  Tensor x4 = leaf({1, 2, 3, 4}, {4});
  Tensor base = ops::mul(x4, 2.0);
  Tensor v = ops::slice(base, 0, 1, 3);
  base.detach_();
  EXPECT_TRUE(v.requires_grad());
  EXPECT_EQ(v.grad_fn()->name(), "slice");
  EXPECT_FALSE(v.is_leaf());
  expect_values(grad({ops::sum(v)}, {x4})[0], {0, 2, 2, 0});
  ops::mul_(base, values({2}, {}));
  EXPECT_TRUE(v.requires_grad());
  EXPECT_EQ(v.grad_fn()->name(), "regenerated_view");  // PyTorch's AsStridedBackward0
  EXPECT_FALSE(v.is_leaf());
}

// y = (x * 2).sum(); x.detach_(); y.backward() -> x.grad None; grad(y, x) raises "One of the
// differentiated Tensors does not require grad". (x * 2).sum().backward(); x.detach_() -> x.grad
// [2, 2] is kept. a = x * 2; a.detach_(); a.requires_grad_() -> a.is_leaf True,
// grad((a * 3).sum(), a) = [3, 3].
TEST(DetachInPlace, ALeafDetachedInPlaceGetsNoGradient) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::sum(ops::mul(x, 2.0));
  x.detach_();
  backward({y});
  EXPECT_FALSE(x.grad().defined());
  Tensor x2 = leaf({1, 2}, {2});
  Tensor y2 = ops::sum(ops::mul(x2, 2.0));
  x2.detach_();
  expect_error([&] { grad({y2}, {x2}); }, {"does not require grad"});

  Tensor x3 = leaf({1, 2}, {2});
  backward({ops::sum(ops::mul(x3, 2.0))});
  x3.detach_();
  expect_values(x3.grad(), {2, 2});

  Tensor a = ops::mul(leaf({1, 2}, {2}), 2.0);
  a.detach_();
  a.set_requires_grad(true);
  EXPECT_TRUE(a.is_leaf());
  expect_values(grad({ops::sum(ops::mul(a, 3.0))}, {a})[0], {3, 3});
}

// x = tensor([0.5, -0.25]) leaf; y = tanh(x * 2); g = grad(exp(y).sum(), x, create_graph=True);
// y.detach_(); g.sum().backward() -> x.grad [-3.9691603236774338, 3.390035316260429]: g's graph
// saved tanh's result as PyTorch's unpack gave it, a tensor of its own that detach_() leaves as
// it is (fuzz --against pytorch, r03: pin-detach-in-place-after-create-graph-unpacked-the-output).
// a = x * 2; b = a * a; a.detach_(); b.sum().backward() raises "Trying to use a saved tensor that
// has been detached in-place": the saved input is the tensor detached.
TEST(DetachInPlace, ASavedOutputUnpackedUnderCreateGraphIsNotTheTensorDetached) {
  Tensor x = leaf({0.5, -0.25}, {2});
  Tensor y = ops::tanh(ops::mul(x, 2.0));
  Tensor g = grad({ops::sum(ops::exp(y))}, {x}, GradArgs().create_graph())[0];
  y.detach_();
  backward({ops::sum(g)});
  expect_values(g, {1.7989077506909523, 0.9908431906567599}, 1e-12);
  expect_values(x.grad(), {-3.9691603236774338, 3.390035316260429}, 1e-12);

  Tensor x2 = leaf({0.5, -0.25}, {2});
  Tensor a = ops::mul(x2, 2.0);
  Tensor b = ops::mul(a, a);
  a.detach_();
  expect_error([&] { backward({ops::sum(b)}); }, {"detached in-place"});
}

// --- matmul's broadcast operand (issue 44, point 6) -------------------------------------------

// a, b = tensor(A) [2, 2], leaf(B) [2, 2, 2]: grad((a @ b).sum(), b) = [[4, 4], [6, 6]] twice;
// y = a @ b; a.mul_(10); grad(y.sum(), b) raises "one of the variables needed for gradient
// computation has been modified by an inplace operation: [torch.DoubleTensor [2, 2, 2]] is at
// version 1; expected version 0 instead." (bmm saved a.expand(2, 2, 2)). Likewise for a [1, 2, 2]
// operand, and for a = x * 1 that requires grad. Before, the expanded operand was a copy and
// backward used a's old values.
TEST(MatmulBroadcast, TheBroadcastOperandIsSavedAsAView) {
  const std::vector<double> A = {1, 2, 3, 4}, B = {1, 0, 0, 1, 2, 1, 1, 2};
  Tensor a = values(A, {2, 2}), b = leaf(B, {2, 2, 2});
  expect_values(grad({ops::sum(ops::matmul(a, b))}, {b})[0], {4, 4, 6, 6, 4, 4, 6, 6});
  Tensor y = ops::matmul(a, b);
  ops::mul_(a, values({10}, {}));
  expect_error([&] { grad({ops::sum(y)}, {b}); },
               {"modified by an in-place operation", "version 1; expected version 0"});

  Tensor a3 = values(A, {1, 2, 2});
  Tensor y3 = ops::matmul(a3, b);
  ops::mul_(a3, values({10}, {}));
  expect_error([&] { grad({ops::sum(y3)}, {b}); },
               {"modified by an in-place operation", "version 1; expected version 0"});

  Tensor x = leaf(A, {2, 2});
  Tensor ax = ops::mul(x, 1.0);
  Tensor yx = ops::matmul(ax, b);
  ops::mul_(ax, values({10}, {}));
  expect_error([&] { grad({ops::sum(yx)}, {b}); },
               {"modified by an in-place operation", "version 1; expected version 0"});
}

// x, b = leaf(A), leaf(B); grad((x @ b * W).sum(), (x, b)) with W = [[[1, 2], [3, 4]], [[5, 6],
// [7, 8]]]: [[17, 19], [25, 27]] (summed over the broadcast batch) and [[[10, 14], [14, 20]],
// [[26, 30], [38, 44]]].
TEST(MatmulBroadcast, GradientsThroughTheExpandedOperand) {
  Tensor x = leaf({1, 2, 3, 4}, {2, 2}), b = leaf({1, 0, 0, 1, 2, 1, 1, 2}, {2, 2, 2});
  Tensor w = values({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  TensorList g = grad({ops::sum(ops::mul(ops::matmul(x, b), w))}, {x, b});
  expect_values(g[0], {17, 19, 25, 27});
  expect_values(g[1], {10, 14, 14, 20, 26, 30, 38, 44});
}

// --- Split outputs whose base was written ------------------------------------------------------

// a = x * 1; v, _ = a.split(2); a.mul_(2); v.grad_fn raises "Output 0 of Split is a view and its
// base or another view of its base has been modified inplace. This view is the output of a
// function that returns multiple views." Before, v's history was regenerated from the base.
TEST(MultiOutputViews, AStaleSplitOutputsHistoryCannotBeRead) {
  Tensor x = leaf({1, 2, 3, 4}, {4});
  Tensor a = ops::mul(x, 1.0);
  Tensor v = ops::split(a, 2)[0];
  ops::mul_(a, values({2}, {}));
  EXPECT_TRUE(v.requires_grad());
  expect_error(
      [&] { (void)v.grad_fn(); },
      {"output 0 of 'split'", "its base or another view of its base has been modified in place",
       "one of several views that one function returned"});
}

}  // namespace
}  // namespace ag
