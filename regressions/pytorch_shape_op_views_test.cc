// broadcast_to, sum_to and the gradients of the reductions, pinned to PyTorch 2.15 (float64):
// broadcast_to is expand, a view; sum_to is a view of its reduction where it drops leading dims;
// the gradients of sum, sum over a dim, sum_to, broadcast_to and the sum back of a broadcast
// operand are views where PyTorch's are (stride 0 where they expand), and mean's is a new tensor
// (Note [View flags follow the base] in ops/views.h, Note [mean's gradient is a new tensor] in
// ops/reduce.cc). These were the deviations copying-shape-ops and copied-gradient-views
// (proptests/conformance/DEVIATIONS.md). The comments give the PyTorch program and what it
// printed.
#include <gtest/gtest.h>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::error_of;
using testing::expect_values;
using testing::leaf;
using testing::shares_storage;
using testing::values;

// The one gradient of `output` with respect to `input` for `grad_output`.
Tensor grad_of(const Tensor& output, const Tensor& input, const Tensor& grad_output) {
  return grad({output}, {input}, GradArgs().grad_outputs({grad_output}))[0];
}

// a = torch.randn(3, requires_grad=True); b = torch.broadcast_to(a, (2, 3))
// b._base is a, b.stride() == (0, 1), b.grad_fn is ExpandBackward0;
// torch.broadcast_to(a, (3,)) is not a, but its _base is a.
TEST(BroadcastTo, IsAViewOfItsInputAlsoAtTheInputsOwnShape) {
  Tensor a = leaf({1, 2, 3}, {3});
  Tensor b = ops::broadcast_to(a, {2, 3});
  EXPECT_TRUE(b.is_view());
  EXPECT_TRUE(shares_storage(b, a));
  EXPECT_EQ(b.strides(), (Shape{0, 1}));
  EXPECT_TRUE(b.requires_grad());
  EXPECT_FALSE(b.is_leaf());
  expect_values(b, {1, 2, 3, 1, 2, 3});
  Tensor same = ops::broadcast_to(a, {3});
  EXPECT_NE(same.impl().get(), a.impl().get());
  EXPECT_TRUE(same.is_view());
  EXPECT_TRUE(shares_storage(same, a));
}

// x = torch.tensor([1., 2., 3.]); torch.broadcast_to(x, (3,)).add_(1) -> x == [2, 3, 4];
// torch.broadcast_to(x, (2, 3)).add_(1) raises "unsupported operation: more than one element of
// the written-to tensor refers to a single memory location".
TEST(BroadcastTo, AWriteThroughItReachesItsInputOrIsRefusedWhereItExpands) {
  Tensor x = values({1, 2, 3}, {3});
  Tensor same = ops::broadcast_to(x, {3});
  ops::add_(same, values({1, 1, 1}, {3}));
  expect_values(x, {2, 3, 4});
}

// torch.broadcast_to(torch.tensor([1., 2., 3.]), (2, 3)).add_(1) raises "unsupported operation:
// more than one element of the written-to tensor refers to a single memory location".
TEST(BroadcastTo, AWriteIsRefusedWhereItExpands) {
  Tensor x = values({1, 2, 3}, {3});
  Tensor wide = ops::broadcast_to(x, {2, 3});
  EXPECT_NE(error_of([&] {
              ops::add_(wide, values({1, 1, 1, 1, 1, 1}, {2, 3}));
            })
                .find("more than one element of the written-to tensor refers to a single memory "
                      "location"),
            std::string::npos);
}

// y = torch.randn(2, 3, requires_grad=True): y.sum_to_size(3)._base is not None (ViewBackward0
// over SumBackward1), y.sum_to_size(1, 3)._base is None, y.sum_to_size(2, 3) is y,
// y.sum_to_size(()) is SumBackward0's result, not a view.
TEST(SumTo, IsAViewOfItsSumWhereItDropsLeadingDims) {
  Tensor y = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor dropped = ops::sum_to(y, {3});
  EXPECT_TRUE(dropped.is_view());
  EXPECT_FALSE(shares_storage(dropped, y));
  expect_values(dropped, {5, 7, 9});
  EXPECT_FALSE(ops::sum_to(y, {1, 3}).is_view());
  EXPECT_EQ(ops::sum_to(y, {2, 3}).impl().get(), y.impl().get());
  EXPECT_FALSE(ops::sum_to(y, {}).is_view());
}

// x = torch.randn(2, 3, requires_grad=True); go = torch.tensor(1.5, requires_grad=True)
// g, = grad(x.sum(), x, go): g._base is go, g.stride() == (0, 0), g.requires_grad True, leaf True.
// The same for a 0-dim x: g is not go, g._base is go.
TEST(GradientViews, SumsGradientExpandsTheIncomingOne) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor go = leaf({1.5}, {});
  Tensor g = grad_of(ops::sum(x), x, go);
  EXPECT_TRUE(g.is_view());
  EXPECT_TRUE(shares_storage(g, go));
  EXPECT_EQ(g.strides(), (Shape{0, 0}));
  EXPECT_FALSE(g.is_contiguous());
  EXPECT_TRUE(g.requires_grad());
  EXPECT_TRUE(g.is_leaf());
  expect_values(g, {1.5, 1.5, 1.5, 1.5, 1.5, 1.5});

  Tensor s = leaf({2}, {});
  Tensor g0 = grad_of(ops::sum(s), s, go);
  EXPECT_NE(g0.impl().get(), go.impl().get());
  EXPECT_TRUE(shares_storage(g0, go));
  EXPECT_TRUE(g0.requires_grad());

  // go without requires_grad: the view does not require grad either.
  Tensor plain = values({1.5}, {});
  EXPECT_FALSE(grad_of(ops::sum(x), x, plain).requires_grad());
}

// grad(x.sum(0), x, go [3]): stride (0, 1), _base go; grad(x.sum(1), x, go [2]): stride (1, 0);
// grad(x.sum(0, keepdim=True), x, go [1, 3]): stride (0, 1), _base go.
TEST(GradientViews, SumOverADimsGradientExpandsTheIncomingOne) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor go3 = leaf({1, 2, 3}, {3});
  Tensor g = grad_of(ops::sum(x, 0), x, go3);
  EXPECT_EQ(g.strides(), (Shape{0, 1}));
  EXPECT_TRUE(shares_storage(g, go3));
  EXPECT_TRUE(g.requires_grad());
  expect_values(g, {1, 2, 3, 1, 2, 3});
  Tensor go2 = leaf({1, 2}, {2});
  Tensor h = grad_of(ops::sum(x, 1), x, go2);
  EXPECT_EQ(h.strides(), (Shape{1, 0}));
  expect_values(h, {1, 1, 1, 2, 2, 2});
  Tensor go13 = leaf({1, 2, 3}, {1, 3});
  Tensor k = grad_of(ops::sum(x, 0, true), x, go13);
  EXPECT_EQ(k.strides(), (Shape{0, 1}));
  EXPECT_TRUE(shares_storage(k, go13));
}

// view() of this [2, 3] gradient of strides (1, 0) raises, as PyTorch's ("view size is not
// compatible with input tensor's size and stride"): its two dims are no one chunk.
TEST(GradientViews, ViewOfAnExpandedGradientRaises) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor h = grad_of(ops::sum(x, 1), x, leaf({1, 2}, {2}));
  EXPECT_NE(error_of([&] { ops::view(h, {6}); }).find("view size is not compatible"),
            std::string::npos);
}

// grad(x.mean(), x, go) and grad(x.mean(0), x, go): stride (3, 1), contiguous, _base None,
// requires_grad False (mean_backward divides the expanded gradient).
TEST(GradientViews, MeansGradientIsANewContiguousTensor) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor go = leaf({1.5}, {});
  Tensor g = grad_of(ops::mean(x), x, go);
  EXPECT_FALSE(g.is_view());
  EXPECT_TRUE(g.is_contiguous());
  EXPECT_FALSE(g.requires_grad());
  expect_values(g, {0.25, 0.25, 0.25, 0.25, 0.25, 0.25});
  Tensor go3 = leaf({3, 6, 9}, {3});
  Tensor h = grad_of(ops::mean(x, 0), x, go3);
  EXPECT_FALSE(h.is_view());
  EXPECT_TRUE(h.is_contiguous());
  EXPECT_FALSE(h.requires_grad());
  expect_values(h, {1.5, 3, 4.5, 1.5, 3, 4.5});
  expect_values(ops::mean(x), {3.5});
  expect_values(ops::mean(x, 1, true), {2, 5});
}

// grad(x.sum_to_size(3), x, go [3]) and grad(x.sum_to_size(1, 3), x, go [1, 3]): stride (0, 1),
// _base go, requires_grad True.
TEST(GradientViews, SumTosGradientExpandsTheIncomingOne) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor go3 = leaf({1, 2, 3}, {3});
  Tensor g = grad_of(ops::sum_to(x, {3}), x, go3);
  EXPECT_EQ(g.strides(), (Shape{0, 1}));
  EXPECT_TRUE(shares_storage(g, go3));
  EXPECT_TRUE(g.requires_grad());
  Tensor go13 = leaf({1, 2, 3}, {1, 3});
  Tensor h = grad_of(ops::sum_to(x, {1, 3}), x, go13);
  EXPECT_EQ(h.strides(), (Shape{0, 1}));
  EXPECT_TRUE(shares_storage(h, go13));
}

// a = torch.randn(3, requires_grad=True); go = torch.randn(2, 3, requires_grad=True)
// grad(torch.broadcast_to(a, (2, 3)), a, go) and grad(a + b, a, go) (b [2, 3]): a view of a new
// sum (_base not go), contiguous, requires_grad False; for a [1, 3]: not a view;
// grad(torch.broadcast_to(a, (3,)), a, go3) is go3 itself.
TEST(GradientViews, TheSumBackOfABroadcastOperandIsAViewOfItsSum) {
  Tensor a = leaf({1, 2, 3}, {3});
  Tensor go = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor g = grad_of(ops::broadcast_to(a, {2, 3}), a, go);
  EXPECT_TRUE(g.is_view());
  EXPECT_FALSE(shares_storage(g, go));
  EXPECT_TRUE(g.is_contiguous());
  EXPECT_FALSE(g.requires_grad());
  expect_values(g, {5, 7, 9});
  Tensor b = leaf({1, 1, 1, 1, 1, 1}, {2, 3});
  Tensor h = grad_of(ops::add(a, b), a, go);
  EXPECT_TRUE(h.is_view());
  EXPECT_FALSE(h.requires_grad());
  expect_values(h, {5, 7, 9});
  Tensor a13 = leaf({1, 2, 3}, {1, 3});
  EXPECT_FALSE(grad_of(ops::add(a13, b), a13, go).is_view());
  Tensor go3 = leaf({1, 2, 3}, {3});
  EXPECT_EQ(grad_of(ops::broadcast_to(a, {3}), a, go3).impl().get(), go3.impl().get());
}

// x.sum().backward(): x.grad is contiguous (3, 1), not a view (AccumulateGrad copies a gradient
// that does not have the variable's layout).
TEST(GradientViews, AGradIsNeverAnExpandedView) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  backward({ops::sum(x)});
  EXPECT_FALSE(x.grad().is_view());
  EXPECT_TRUE(x.grad().is_contiguous());
  expect_values(x.grad(), {1, 1, 1, 1, 1, 1});
}

}  // namespace
}  // namespace ag
