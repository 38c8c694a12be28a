// The gradients of select, slice, diagonal and unfold differentiate to views of their incoming
// gradient, pinned to PyTorch 2.15 (float64; Note [View gradients differentiate to views],
// ops/view_backward.cc). Found by fuzz --against pytorch (pin-slice-backward-gradient-is-a-view):
// the engine's gradient was a copy, which did not require grad where PyTorch's view does.
//
// Each case: x = iota(shape).requires_grad_(); y = VIEW(x); go = iota(y.shape, 0.5) requiring
// grad; g, = grad(y, x, go, create_graph=True); gg = iota(g.shape) requiring grad, where iota(s,
// k) is arange(1, n + 1).reshape(s) * k, cloned. Then, as PyTorch prints them:
// - v, = grad(g, go, gg): requires_grad True, is_leaf True, v._base is gg, v's strides, storage
//   offset and values;
// - v2, = grad(g, go, gg, create_graph=True): grad_fn VIEW (SelectBackward0...), _base gg;
//   t, = grad(v2, gg, w = iota(v2.shape, 2) requiring grad, create_graph=True): grad_fn the
//   backward op (SelectBackwardBackward0...) and its values; q, = grad(t, w, u = iota(t.shape, 3)):
//   a view of u that does not require grad;
// - grad(g, go, iota(g.shape reversed).t()): a view of that transposed gradient, at its strides.
#include <gtest/gtest.h>

#include <functional>

#include "engine/autograd.h"
#include "engine/grad_mode.h"
#include "engine/node.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::error_of;
using testing::expect_values;
using testing::leaf;
using testing::shares_storage;

// arange(1, n + 1).reshape(shape) * scale, a leaf.
Tensor iota(const Shape& shape, double scale = 1, bool requires_grad = true) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i + 1) * scale;
  return leaf(v, shape, requires_grad);
}

Tensor grad_of(const Tensor& output, const Tensor& input, const Tensor& grad_output,
               bool create_graph = false) {
  return grad({output}, {input},
              GradArgs().grad_outputs({grad_output}).retain_graph().create_graph(create_graph))[0];
}

bool same_tensor(const Tensor& a, const Tensor& b) { return a.impl() == b.impl(); }

struct Expected {
  std::string view_op, backward_op;
  Shape strides;  // of v over gg's storage
  int64_t offset;
  std::vector<double> v, t, q;
  Shape transposed_strides;  // of the gradient for a transposed gg
  int64_t transposed_offset;
  std::vector<double> transposed;
};

void check_double_backward(const Shape& shape, const std::function<Tensor(const Tensor&)>& view_op,
                           const Expected& e) {
  const Tensor x = iota(shape);
  const Tensor y = view_op(x);
  const Tensor go = iota(y.shape(), 0.5);
  const Tensor g = grad_of(y, x, go, /*create_graph=*/true);
  ASSERT_TRUE(g.grad_fn());
  EXPECT_EQ(g.grad_fn()->name(), e.backward_op);

  const Tensor gg = iota(g.shape());
  const Tensor v = grad_of(g, go, gg);
  EXPECT_TRUE(v.requires_grad());
  EXPECT_TRUE(v.is_leaf());
  ASSERT_TRUE(v.is_view());
  EXPECT_TRUE(same_tensor(v.base(), gg));
  EXPECT_TRUE(shares_storage(v, gg));
  EXPECT_EQ(v.strides(), e.strides);
  EXPECT_EQ(v.storage_offset(), e.offset);
  expect_values(v, e.v);

  const Tensor v2 = grad_of(g, go, gg, /*create_graph=*/true);
  ASSERT_TRUE(v2.grad_fn());
  EXPECT_EQ(v2.grad_fn()->name(), e.view_op);
  ASSERT_TRUE(v2.is_view());
  EXPECT_TRUE(same_tensor(v2.base(), gg));
  const Tensor w = iota(v2.shape(), 2);
  const Tensor t = grad_of(v2, gg, w, /*create_graph=*/true);
  ASSERT_TRUE(t.grad_fn());
  EXPECT_EQ(t.grad_fn()->name(), e.backward_op);
  expect_values(t, e.t);
  const Tensor u = iota(t.shape(), 3, /*requires_grad=*/false);
  const Tensor q = grad_of(t, w, u);
  EXPECT_FALSE(q.requires_grad());
  ASSERT_TRUE(q.is_view());
  EXPECT_TRUE(same_tensor(q.base(), u));
  expect_values(q, e.q);

  const Tensor transposed_root = iota({g.shape()[1], g.shape()[0]}, 1, /*requires_grad=*/false);
  const Tensor transposed = grad_of(g, go, ops::transpose(transposed_root, 0, 1));
  ASSERT_TRUE(transposed.is_view());
  EXPECT_TRUE(same_tensor(transposed.base(), transposed_root));
  EXPECT_EQ(transposed.strides(), e.transposed_strides);
  EXPECT_EQ(transposed.storage_offset(), e.transposed_offset);
  expect_values(transposed, e.transposed);
}

// VIEW = x.select(1, 1), x [2, 3]: v stride (3,), offset 1, [2, 5]; t [0, 2, 0, 0, 4, 0]; q [6,
// 15]; transposed (1,), offset 2, [3, 4].
TEST(ViewDoubleBackward, SelectsGradientIsASelectOfTheIncomingGradient) {
  check_double_backward(
      {2, 3}, [](const Tensor& x) { return ops::select(x, 1, 1); },
      {"select", "select_backward", {3}, 1, {2, 5}, {0, 2, 0, 0, 4, 0}, {6, 15}, {1}, 2, {3, 4}});
}

// VIEW = x[:, 0:3:2], x [2, 4]: v strides (4, 2), offset 0, [1, 3, 5, 7]; t [2, 0, 4, 0, 6, 0, 8,
// 0]; q [3, 9, 15, 21]; transposed (1, 4), offset 0, [1, 5, 2, 6].
TEST(ViewDoubleBackward, SlicesGradientIsASliceOfTheIncomingGradient) {
  check_double_backward({2, 4}, [](const Tensor& x) { return ops::slice(x, 1, 0, 3, 2); },
                        {"slice",
                         "slice_backward",
                         {4, 2},
                         0,
                         {1, 3, 5, 7},
                         {2, 0, 4, 0, 6, 0, 8, 0},
                         {3, 9, 15, 21},
                         {1, 4},
                         0,
                         {1, 5, 2, 6}});
}

// VIEW = x.diagonal(1, 0, 1), x [3, 4]: v stride (5,), offset 1, [2, 7, 12]; t [0, 2, 0, 0, 0, 0,
// 4, 0, 0, 0, 0, 6]; q [6, 21, 36]; transposed (4,), offset 3, [4, 8, 12].
TEST(ViewDoubleBackward, DiagonalsGradientIsADiagonalOfTheIncomingGradient) {
  check_double_backward({3, 4}, [](const Tensor& x) { return ops::diagonal(x, 1, 0, 1); },
                        {"diagonal",
                         "diagonal_backward",
                         {5},
                         1,
                         {2, 7, 12},
                         {0, 2, 0, 0, 0, 0, 4, 0, 0, 0, 0, 6},
                         {6, 21, 36},
                         {4},
                         3,
                         {4, 8, 12}});
}

// VIEW = x.unfold(1, 2, 1), x [2, 4] (overlapping windows): v strides (4, 1, 1), offset 0, [1, 2,
// 2, 3, 3, 4, 5, 6, 6, 7, 7, 8]; t [2, 10, 18, 12, 14, 34, 42, 24]; q [3, 6, 6, 9, 9, 12, 15, 18,
// 18, 21, 21, 24]; transposed (1, 2, 2), offset 0, [1, 3, 3, 5, 5, 7, 2, 4, 4, 6, 6, 8].
TEST(ViewDoubleBackward, UnfoldsGradientIsAnUnfoldOfTheIncomingGradient) {
  check_double_backward({2, 4}, [](const Tensor& x) { return ops::unfold(x, 1, 2, 1); },
                        {"unfold",
                         "unfold_backward",
                         {4, 1, 1},
                         0,
                         {1, 2, 2, 3, 3, 4, 5, 6, 6, 7, 7, 8},
                         {2, 10, 18, 12, 14, 34, 42, 24},
                         {3, 6, 6, 9, 9, 12, 15, 18, 18, 21, 21, 24},
                         {1, 2, 2},
                         0,
                         {1, 3, 3, 5, 5, 7, 2, 4, 4, 6, 6, 8}});
}

// VIEW = x.select(1, 1), x [2, 3]; v, = grad(g, go, gg): v shares gg's version counter
// (gg.add_(0) under no_grad: v._version 1); v.add_(1) raises "A view was created in no_grad mode
// and is being modified inplace with grad mode enabled"; under no_grad it writes gg: [1, 3, 3, 4,
// 6, 6].
TEST(ViewDoubleBackward, TheGradientIsANoGradViewOfTheIncomingGradient) {
  const Tensor x = iota({2, 3});
  const Tensor y = ops::select(x, 1, 1);
  const Tensor go = iota({2}, 0.5);
  const Tensor g = grad_of(y, x, go, /*create_graph=*/true);
  Tensor gg = iota({2, 3});
  Tensor v = grad_of(g, go, gg);
  const uint32_t before = v.version();
  {
    NoGradGuard no_grad;
    ops::add_(gg, ops::zeros_like(gg));
  }
  EXPECT_EQ(v.version(), before + 1);
  EXPECT_NE(error_of([&] {
              ops::add_(v, ops::ones_like(v));
            }).find("made with grad mode off and is being modified in place with grad mode on"),
            std::string::npos);
  {
    NoGradGuard no_grad;
    ops::add_(v, ops::ones_like(v));
  }
  expect_values(gg, {1, 3, 3, 4, 6, 6});
}

// VIEW = x[:, 2:1], x [2, 4] (no elements): v requires grad, is a leaf and a view of gg; t is
// recorded (SliceBackwardBackward0), zeros, unlike as_strided's (Note [Zero-size as_strided
// gradients], ops/view_ops.cc).
TEST(ViewDoubleBackward, AnEmptySlicesGradientIsAViewToo) {
  const Tensor x = iota({2, 4});
  const Tensor y = ops::slice(x, 1, 2, 1, 1);
  const Tensor go = iota(y.shape(), 0.5);
  const Tensor g = grad_of(y, x, go, /*create_graph=*/true);
  const Tensor gg = iota({2, 4});
  const Tensor v = grad_of(g, go, gg);
  EXPECT_EQ(v.shape(), (Shape{2, 0}));
  EXPECT_TRUE(v.requires_grad());
  EXPECT_TRUE(v.is_leaf());
  ASSERT_TRUE(v.is_view());
  EXPECT_TRUE(same_tensor(v.base(), gg));
  const Tensor v2 = grad_of(g, go, gg, /*create_graph=*/true);
  const Tensor w = iota(v2.shape(), 2);
  const Tensor t = grad_of(v2, gg, w, /*create_graph=*/true);
  ASSERT_TRUE(t.grad_fn());
  EXPECT_EQ(t.grad_fn()->name(), "slice_backward");
  expect_values(t, {0, 0, 0, 0, 0, 0, 0, 0});
}

}  // namespace
}  // namespace ag
