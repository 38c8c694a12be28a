// Views with strides (Note [Strided tensors], Note [Views of any stride]): values, gradients and
// in-place writes through views, each pinned to PyTorch 2.15 (the programs are in
// strided_views_goldens.py beside this file, which prints these numbers), and PyTorch's errors.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using V = std::vector<double>;
using testing::expect_error;

Tensor leaf(const V& values, const Shape& shape) { return testing::leaf(values, shape); }
Tensor constant(const V& values, const Shape& shape) { return testing::values(values, shape); }
void expect_values(const Tensor& t, const V& expected, const char* what) {
  SCOPED_TRACE(what);
  testing::expect_values(t, expected, 1e-9);
}

TEST(StridedViews, LayoutsAsPyTorch) {
  Tensor x = constant({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor xt = ops::t(x);
  EXPECT_EQ(xt.strides(), Shape({1, 3}));
  EXPECT_FALSE(xt.is_contiguous());
  EXPECT_TRUE(xt.is_view());
  EXPECT_TRUE(xt.base().is_same(x));
  expect_values(xt, {1, 4, 2, 5, 3, 6}, "t");
  EXPECT_EQ(ops::unsqueeze(x, 2).strides(), Shape({3, 1, 1}));
  EXPECT_EQ(ops::expand(constant({1, 2, 3}, {3, 1}), {-1, 4}).strides(), Shape({1, 0}));
  // A new dim of size 1 steps over the dims after it; a 0-dim tensor's expand has strides 0.
  EXPECT_EQ(ops::expand(constant({1, 2}, {2}), {2, 1, 2}).strides(), Shape({0, 2, 1}));
  EXPECT_EQ(ops::expand(constant({1, 2}, {2}), {1, 1, 2}).strides(), Shape({2, 2, 1}));
  EXPECT_EQ(ops::expand(constant({1, 2, 3}, {3, 1}), {1, 3, 4}).strides(), Shape({3, 1, 0}));
  EXPECT_EQ(ops::expand(constant({1}, {}), {1, 3}).strides(), Shape({0, 0}));
  // A contiguous view keeps its size-1 dims' strides, and elementwise outputs follow them where
  // the operands broadcast (TensorIterator's order), as PyTorch's: v0.permute(1, 2, 0) is [3, 1, 1]
  // with strides [1, 1, 3]; v1 * v0 has strides [1, 3, 9], v1 * 2 [1, 1, 3], v1.exp() [1, 1, 1].
  Tensor v0 = constant({1, 2, 3}, {1, 3, 1});
  Tensor v1 = ops::permute(v0, {1, 2, 0});
  EXPECT_EQ(v1.strides(), Shape({1, 1, 3}));
  EXPECT_TRUE(v1.is_contiguous());
  EXPECT_TRUE(ops::contiguous(v1).is_same(v1));
  Tensor product = ops::mul(v1, v0);
  EXPECT_EQ(product.strides(), Shape({1, 3, 9}));
  EXPECT_FALSE(product.is_contiguous());
  expect_values(product, {1, 2, 3, 2, 4, 6, 3, 6, 9}, "broadcast product");
  EXPECT_EQ(ops::mul(v1, 2.0).strides(), Shape({1, 1, 3}));
  EXPECT_EQ(ops::exp(v1).strides(), Shape({1, 1, 1}));
  EXPECT_EQ(ops::add(v1, v1).strides(), Shape({1, 1, 1}));
  EXPECT_EQ(ops::clone(v1).strides(), Shape({1, 1, 3}));
  EXPECT_EQ(
      ops::view(ops::expand(ops::unfold(constant({1, 2}, {2}), 0, 2, 1), {2, 1, 2}), {2, 1, 2})
          .strides(),
      Shape({0, 2, 1}));
  // view and reshape give a contiguous input PyTorch's computeStride strides too: its size-1 dims'
  // strides carry over (x = torch.zeros(()).as_strided([1], [2]): x.view(1) (2,), x.view(1, 1)
  // (2, 2); torch.zeros(3, 4)[:, :1].view(1, 3, 1) (12, 4, 1)); a write of one by the other is
  // then a full overlap, as in PyTorch (found by fuzz --against pytorch, seed 5902).
  Tensor s = ops::as_strided(constant({7}, {}), {1}, {2}, 0);
  EXPECT_EQ(ops::view(s, {1}).strides(), Shape({2}));
  EXPECT_EQ(ops::view(s, {1, 1}).strides(), Shape({2, 2}));
  EXPECT_EQ(ops::reshape(s, {1, 1, 1}).strides(), Shape({2, 2, 2}));
  EXPECT_EQ(
      ops::view(ops::slice(constant(std::vector<double>(12, 1.0), {3, 4}), 1, 0, 1), {1, 3, 1})
          .strides(),
      Shape({12, 4, 1}));
  ops::add_(s, ops::view(s, {1}));
  expect_values(s, {14}, "add_ of a view over the same elements at the same strides");
  Tensor row = ops::select(x, 0, 1);
  EXPECT_EQ(row.storage_offset(), 3);
  EXPECT_TRUE(row.is_contiguous());
  expect_values(row, {4, 5, 6}, "select");
  Tensor col = ops::slice(x, 1, 0, 3, 2);
  EXPECT_EQ(col.shape(), Shape({2, 2}));
  EXPECT_EQ(col.strides(), Shape({3, 2}));
  expect_values(col, {1, 3, 4, 6}, "slice step 2");
  expect_values(ops::slice(x, 1, -2, 100), {2, 3, 5, 6}, "slice from the end, clamped");
  expect_values(ops::diagonal(constant({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}), 1), {2, 6},
                "diagonal 1");
  expect_values(ops::unfold(constant({1, 2, 3, 4, 5}, {5}), 0, 2, 2), {1, 2, 3, 4}, "unfold");
  // reshape: a view where strides allow, a copy (not a view) where not, as PyTorch.
  EXPECT_TRUE(ops::reshape(xt, {3, 2}).is_view());
  Tensor flat = ops::reshape(xt, {6});
  EXPECT_FALSE(flat.is_view());
  expect_values(flat, {1, 4, 2, 5, 3, 6}, "reshape of a transpose");
  Tensor c = ops::contiguous(xt);
  EXPECT_EQ(c.strides(), Shape({2, 1}));
  EXPECT_FALSE(ops::detach(x).is_view());
  // Views share the version counter: a write through one is seen by all.
  const uint32_t before = x.version();
  Tensor r = ops::select(x, 0, 0);
  ops::mul_(r, constant({10}, {1}));
  EXPECT_EQ(x.version(), before + 1);
  expect_values(x, {10, 20, 30, 4, 5, 6}, "written through select");
  expect_values(xt, {10, 4, 20, 5, 30, 6}, "seen through t");
  // Elementwise ops and products read strided operands.
  expect_values(ops::add(xt, xt), {20, 8, 40, 10, 60, 12}, "add of transposes");
  expect_values(ops::exp(ops::mul(ops::t(constant({0, 0, 0, 0}, {2, 2})), 1.0)), {1, 1, 1, 1},
                "unary of a transpose");
  expect_values(ops::mm(xt, x), {116, 220, 324, 220, 425, 630, 324, 630, 936}, "mm of t(x), x");
}

// The ops that read their operands through one host loop (ops/host_kernels.cc) and the joins take
// strided operands too, as their values and gradients show.
TEST(StridedViews, SelectionAndJoinOpsReadStridedOperands) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor xt = ops::t(x);  // [[1, 4], [2, 5], [3, 6]]
  expect_values(ops::cat({xt, xt}, 0), {1, 4, 2, 5, 3, 6, 1, 4, 2, 5, 3, 6}, "cat");
  Tensor st = ops::stack({xt, xt}, 1);
  EXPECT_EQ(st.shape(), Shape({3, 2, 2}));
  expect_values(st, {1, 4, 1, 4, 2, 5, 2, 5, 3, 6, 3, 6}, "stack");
  expect_values(ops::cumsum(xt, 0), {1, 4, 3, 9, 6, 15}, "cumsum");
  expect_values(ops::index_select(xt, 0, {2, 0}), {3, 6, 1, 4}, "index_select");
  // d/dx of sum(cumsum(t(x), 0) * w): w's suffix sums, transposed back.
  Tensor w = constant({1, 2, 3, 4, 5, 6}, {3, 2});
  expect_values(grad({ops::sum(ops::mul(ops::cumsum(xt, 0), w))}, {x})[0], {9, 8, 5, 12, 10, 6},
                "cumsum of a transpose, dx");
}

TEST(StridedViews, SelectThenMulInPlace) {  // CopySlices over part of the base
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor z = leaf({7, 8, 9}, {3});
  Tensor b = ops::mul(x, 2.0);
  Tensor row = ops::select(b, 0, 1);
  ops::mul_(row, z);
  Tensor w = constant({1, -1, 2, -2, 3, -3}, {2, 3});
  expect_values(b, {2, 4, 6, 56, 80, 108}, "b");
  TensorList g = grad({ops::sum(ops::mul(b, w))}, {x, z});
  expect_values(g[0], {2, -2, 4, -28, 48, -54}, "dx");
  expect_values(g[1], {-16, 30, -36}, "dz");
}

TEST(StridedViews, StepSliceAddInPlace) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  Tensor y = leaf({0.5, -1.5, 2.5, 1}, {2, 2});
  Tensor b = ops::clone(x);
  Tensor s = ops::slice(b, 1, 0, 4, 2);
  ops::add_(s, y);
  expect_values(b, {1.5, 2, 1.5, 4, 7.5, 6, 8, 8}, "b");
  TensorList g = grad({ops::sum(ops::mul(b, b))}, {x, y});
  expect_values(g[0], {3, 4, 3, 8, 15, 12, 16, 16}, "dx");
  expect_values(g[1], {3, 3, 15, 16}, "dy");
}

TEST(StridedViews, TransposeMulInPlace) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = ops::mul(x, 1.0);
  Tensor bt = ops::t(b);
  ops::mul_(bt, constant({1, 2, 3, 4, 5, 6}, {3, 2}));
  expect_values(b, {1, 6, 15, 8, 20, 36}, "b");
  Tensor m = constant({1, 0, 2, 1, 0, 3}, {3, 2});
  TensorList g = grad({ops::sum(ops::pow(ops::mm(b, m), 2.0))}, {x});
  expect_values(g[0], {26, 462, 1530, 192, 1792, 4608}, "dx");
}

TEST(StridedViews, StaleSiblingRegenerates) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = ops::mul(x, 1.0);
  Tensor v1 = ops::select(b, 0, 0);
  Tensor v2 = ops::select(b, 1, 1);
  ops::mul_(v1, constant({3}, {1}));
  expect_values(v2, {6, 5}, "v2");
  Tensor loss = ops::add(ops::sum(ops::mul(v2, constant({2, 5}, {2}))), ops::sum(b));
  expect_values(grad({loss}, {x})[0], {3, 9, 3, 1, 6, 1}, "dx");
}

TEST(StridedViews, OverlappingWindows) {
  Tensor x = leaf({1, 2, 3, 4}, {4});
  Tensor y = ops::as_strided(x, {3, 2}, {1, 1}, 0);
  expect_values(y, {1, 2, 2, 3, 3, 4}, "as_strided");
  Tensor w = constant({1, 2, 3, 4, 5, 6}, {3, 2});
  expect_values(grad({ops::sum(ops::mul(y, w))}, {x})[0], {1, 5, 9, 6}, "as_strided dx");
  Tensor x6 = leaf({1, 2, 3, 4, 5, 6}, {6});
  Tensor u = ops::unfold(x6, 0, 3, 2);
  expect_values(u, {1, 2, 3, 3, 4, 5}, "unfold");
  expect_values(grad({ops::sum(ops::mul(u, u))}, {x6})[0], {2, 4, 12, 8, 10, 0}, "unfold dx");
}

// Note [Operands read before the write] (ops/inplace.cc): an operand sharing the target's storage
// in a layout the overlap checks let pass is read before the write, so elements the write has
// already changed are not read again. PyTorch reads it as it writes there: these values are
// PyTorch's for a clone() of the operand (pin-add-into-overlapping-unfold-from-its-view,
// pin-copy-into-gapped-view-from-overlapping-piece).
TEST(StridedViews, OperandSharingTheTargetIsReadBeforeTheWrite) {
  {
    Tensor x = constant({1, 10, 100}, {3, 1});
    Tensor u = ops::unfold(x, 0, 2, 1);  // [[1, 10], [10, 100]]: x[1] at two indices
    ops::add_(u, ops::view(u, {2, 1, 2}));
    expect_values(x, {2, 30, 200}, "add_");  // as it wrote: 40
  }
  {
    Tensor x = constant({1, 10, 100}, {3, 1});
    Tensor u = ops::unfold(x, 0, 2, 1);
    ops::mul_(u, ops::view(u, {2, 1, 2}));
    expect_values(x, {1, 1000, 10000}, "mul_");  // as it wrote: 10000 at x[1]
  }
  {
    Tensor x = constant({1, 2, 3, 4}, {2, 2});
    Tensor v1 = ops::split(x, 1, 0)[0];
    Tensor v3 = ops::as_strided(v1, {1, 2}, {1, 2}, 1);  // x[1], x[3]
    ops::copy_(v3, v1);
    expect_values(x, {1, 1, 3, 2}, "copy_ into a gapped view");  // as it wrote: x[3] = 1
  }
  {
    Tensor x = constant({1, 2, 3, 4}, {4});
    Tensor tail = ops::slice(x, 0, 2, 4, 1);
    ops::copy_(tail, ops::as_strided(x, {2}, {2}, 0));           // x[0], x[2]
    expect_values(x, {1, 2, 1, 3}, "copy_ from a gapped view");  // as it wrote: x[3] = 1
  }
}

// Note [The order a write visits its target in] (ops/cpu/cpu_backend.cc): copy_ into a target that
// reaches one element at several indices leaves there the value PyTorch's TensorIterator writes
// last (fuzz --against pytorch, r06: pin-copy-into-overlapping-view-visits-columns-first). The
// values are PyTorch 2.15's: base = zeros(8); base.as_strided(size, stride, 1).copy_(src).
TEST(StridedViews, CopyIntoAnOverlappingTargetVisitsItAsPyTorchDoes) {
  auto copied = [](const Shape& size, const Shape& stride, const Tensor& src) {
    Tensor base = constant(V(8, 0.0), {8});
    Tensor target = ops::as_strided(base, size, stride, 1);
    ops::copy_(target, src);
    return base;
  };
  // Equal strides: the dim of size 2 goes inside (down the columns), not row-major's 1 4 5 6.
  expect_values(copied({2, 3}, {1, 1}, constant({1, 2, 3, 4, 5, 6}, {2, 3})),
                {0, 1, 2, 3, 6, 0, 0, 0}, "[2, 3] strides [1, 1]");
  expect_values(copied({2, 3}, {1, 1}, constant({1, 2, 3}, {3})), {0, 1, 2, 3, 3, 0, 0, 0},
                "[2, 3] strides [1, 1], broadcast");
  // The size-2 dim is already inside: row-major.
  expect_values(copied({3, 2}, {1, 1}, constant({1, 2, 3, 4, 5, 6}, {3, 2})),
                {0, 1, 3, 5, 6, 0, 0, 0}, "[3, 2] strides [1, 1]");
  expect_values(copied({3, 2}, {1, 1}, constant({1, 2}, {2})), {0, 1, 1, 1, 2, 0, 0, 0},
                "[3, 2] strides [1, 1], broadcast");
  // The smaller stride goes inside.
  expect_values(copied({2, 3}, {1, 2}, constant({1, 2, 3, 4, 5, 6}, {2, 3})),
                {0, 1, 4, 2, 5, 3, 6, 0}, "[2, 3] strides [1, 2]");
}

// as_strided_backward's counts: an input that reads a storage element at several indices shares
// its gradient among them (Note [as_strided gradients of overlapping inputs]).
TEST(StridedViews, AsStridedOfOverlappingInputs) {
  Tensor x = leaf({2}, {});
  Tensor y = ops::as_strided(ops::expand(x, {2}), {}, {}, 0);
  expect_values(grad({ops::mul(y, 3.0)}, {x})[0], {3}, "as_strided of expand dx");
  Tensor x6 = leaf({1, 2, 3, 4, 5, 6}, {6});
  Tensor u = ops::unfold(x6, 0, 3, 2);  // [[1, 2, 3], [3, 4, 5]]
  Tensor w = ops::as_strided(u, {4}, {1}, 1);
  expect_values(w, {2, 3, 4, 5}, "as_strided of unfold");
  Tensor loss = ops::sum(ops::mul(ops::mul(w, w), constant({1, -2, 3, 5}, {4})));
  Tensor gx = grad({loss}, {x6}, GradArgs().create_graph())[0];
  expect_values(gx, {0, 4, -12, 24, 50, 0}, "dx");  // -24 without the counts
  expect_values(grad({ops::sum(ops::mul(gx, gx))}, {x6})[0], {0, 16, 96, 288, 1000, 0},
                "d(dx.dx)/dx");
}

// Note [Views over a root's storage]: x.t() + s has strides [1, 2], and as_strided reads it in
// storage order.
TEST(StridedViews, AsStridedOfNonContiguousRoot) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor s = leaf({0.5}, {});
  Tensor b = ops::add(ops::t(x), s);
  ASSERT_EQ(b.strides(), Shape({1, 2}));
  Tensor y = ops::as_strided(b, {3}, {1}, 1);
  expect_values(y, {2.5, 3.5, 4.5}, "y");
  Tensor loss = ops::sum(ops::mul(ops::mul(y, y), constant({1, -2, 3}, {3})));
  TensorList g = grad({loss}, {x, s}, GradArgs().create_graph());
  expect_values(g[0], {0, 5, -14, 27, 0, 0}, "dx");
  expect_values(g[1], {18}, "ds");
  TensorList gg = grad({ops::add(ops::sum(ops::mul(g[0], g[0])), ops::mul(g[1], g[1]))}, {x, s});
  expect_values(gg[0], {0, 92, -32, 540, 0, 0}, "d(dx.dx + ds.ds)/dx");
  expect_values(gg[1], {600}, "d(dx.dx + ds.ds)/ds");
}

// as_strided_backward sums a result's stride-0 dims and squeezes its size-1 ones before it
// scatters: the double backward's gradient wrt the incoming gradient is then an expand of an
// unsqueeze, strides [0, 1] in PyTorch, so contiguous() copies it.
TEST(StridedViews, AsStridedDoubleBackwardLayout) {
  Tensor x = leaf({1, 2, 3}, {1, 3});
  Tensor u = ops::unfold(x, 1, 1, 1);
  Tensor y = ops::as_strided(u, {2, 1}, {0, 0}, 2);
  Tensor gu = grad({y}, {u}, GradArgs().grad_outputs({y}).create_graph())[0];
  expect_values(gu, {0, 0, 6}, "du");
  Tensor gy = grad({gu}, {y}, GradArgs().grad_outputs({gu}))[0];
  expect_values(gy, {6, 6}, "d(du)/dy");
  EXPECT_EQ(gy.strides(), Shape({0, 1}));
  EXPECT_FALSE(gy.is_contiguous());
  EXPECT_FALSE(ops::contiguous(gy).is_same(gy));
}

TEST(StridedViews, WriteThroughAsStridedOfNonContiguousRoot) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor z = leaf({2, -1}, {2});
  Tensor b = ops::mul(ops::t(x), constant({1}, {}));
  ASSERT_EQ(b.strides(), Shape({1, 2}));
  Tensor sibling = ops::as_strided(b, {3}, {1}, 0);
  Tensor y = ops::as_strided(b, {2}, {2}, 1);
  ops::mul_(y, z);
  expect_values(b, {1, 3, 5, 4, -4, 6}, "b");
  expect_values(sibling, {1, 4, 3}, "sibling");  // regenerated after the write
  Tensor w = constant({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor loss =
      ops::add(ops::sum(ops::mul(ops::mul(b, b), w)), ops::sum(ops::mul(sibling, sibling)));
  TensorList g = grad({loss}, {x, z});
  expect_values(g[0], {4, 80, 18, 40, 30, 72}, "dx");
  expect_values(g[1], {80, -160}, "dz");
}

TEST(StridedViews, DiagonalMulInPlace) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  Tensor z = leaf({2, 3, 4}, {3});
  Tensor b = ops::clone(x);
  Tensor d = ops::diagonal(b);
  ops::mul_(d, z);
  expect_values(b, {2, 2, 3, 4, 15, 6, 7, 8, 36}, "b");
  TensorList g = grad({ops::sum(ops::mul(b, b))}, {x, z});
  expect_values(g[0], {8, 4, 6, 8, 90, 12, 14, 16, 288}, "dx");
  expect_values(g[1], {4, 150, 648}, "dz");
}

TEST(StridedViews, ExpandAndPermute) {
  Tensor x = leaf({1, 2, 3}, {1, 3});
  Tensor y = ops::mul(ops::expand(x, {2, 3}), constant({1, 2, 3, 4, 5, 6}, {2, 3}));
  expect_values(y, {1, 4, 9, 4, 10, 18}, "expand");
  expect_values(grad({ops::sum(y)}, {x})[0], {5, 7, 9}, "expand dx");
  Tensor x3 = leaf({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 3, 2});
  Tensor p = ops::reshape(ops::permute(x3, {2, 0, 1}), {4, 3});
  Tensor mm = ops::mm(p, constant({1, 2, 3}, {3, 1}));
  expect_values(mm, {22, 58, 28, 64}, "permute then mm");
  expect_values(grad({ops::sum(ops::mul(mm, mm))}, {x3})[0],
                {44, 56, 88, 112, 132, 168, 116, 128, 232, 256, 348, 384}, "permute dx");
}

TEST(StridedViews, MultiOutputViewsRead) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  std::vector<Tensor> parts = ops::split(x, 2, 1);
  ASSERT_EQ(parts.size(), 2u);
  std::vector<Tensor> rows = ops::unbind(x, 0);
  Tensor y = ops::sum(ops::mul(parts[0], parts[0]));
  y = ops::add(y, ops::sum(ops::mul(parts[1], 3.0)));
  y = ops::add(y, ops::sum(ops::mul(rows[0], rows[1])));
  y = ops::add(y, ops::sum(ops::squeeze(ops::unsqueeze(x, 0))));
  expect_values(grad({y}, {x})[0], {7, 10, 10, 10, 13, 7}, "dx");
}

TEST(StridedViews, RnnOverTimeSlices) {  // out[:, t] = h
  Tensor x = leaf({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {2, 3});
  Tensor w = leaf({0.5}, {1});
  Tensor out = ops::zeros({2, 3}, DType::kFloat64);
  Tensor h = ops::zeros({2}, DType::kFloat64);
  for (int64_t t = 0; t < 3; ++t) {
    h = ops::tanh(ops::add(ops::mul(ops::select(x, 1, t), w), h));
    Tensor column = ops::select(out, 1, t);
    ops::copy_(column, h);
  }
  expect_values(out,
                {0.049958374958, 0.148844331021, 0.290254661353, 0.197375320225, 0.419739128469,
                 0.616747687068},
                "out");
  TensorList g = grad({ops::sum(ops::mul(out, out))}, {x, w});
  expect_values(g[0],
                {0.454281086632, 0.405459361125, 0.265801353856, 0.824562748861, 0.660612057526,
                 0.382150614519},
                "dx");
  expect_values(g[1], {2.191363768127}, "dw");
}

TEST(StridedViews, CopySlicesUnderCreateGraph) {
  Tensor x = leaf({1, 2, 3, 4}, {2, 2});
  Tensor z = leaf({2, 3}, {2});
  Tensor b = ops::mul(x, x);
  Tensor row = ops::select(b, 0, 0);
  ops::mul_(row, z);
  Tensor gx = grad({ops::sum(b)}, {x}, GradArgs().create_graph())[0];
  expect_values(gx, {4, 12, 6, 8}, "dx");
  TensorList g = grad({ops::sum(ops::mul(gx, gx))}, {x, z});
  expect_values(g[0], {32, 144, 24, 32}, "d(dx.dx)/dx");
  expect_values(g[1], {16, 96}, "d(dx.dx)/dz");
}

TEST(StridedViews, ViewOfViewOfViewWritten) {
  V values(24);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i + 1);
  Tensor x = leaf(values, {2, 3, 4});
  Tensor b = ops::mul(x, 1.0);
  Tensor v = ops::select(ops::slice(ops::permute(b, {2, 1, 0}), 0, 1, 3), 2, 1);
  ops::add_(v, constant({10, 20, 30, 40, 50, 60}, {2, 3}));
  expect_values(
      b, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 24, 55, 16, 17, 38, 69, 20, 21, 52, 83, 24},
      "b");
  expect_values(grad({ops::mul(ops::sum(ops::mul(b, b)), 0.01)}, {x})[0],
                {0.02, 0.04, 0.06, 0.08, 0.1,  0.12, 0.14, 0.16, 0.18, 0.2,  0.22, 0.24,
                 0.26, 0.48, 1.1,  0.32, 0.34, 0.76, 1.38, 0.4,  0.42, 1.04, 1.66, 0.48},
                "dx");
}

// PyTorch's refusals, in substance, each naming the op and the shapes; nothing is changed.
TEST(StridedViews, Errors) {
  Tensor x = constant({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_error([&] { ops::view(ops::t(x), {6}); }, {"view", "Use .reshape(...) instead"});
  expect_error(
      [&] {
        ops::expand(x, {2, 4});
      },
      {"expand", "must match the existing size (3) at non-singleton dimension 1"});
  expect_error([&] { ops::select(constant({1}, {}), 0, 0); }, {"select", "0-dim"});
  expect_error(
      [&] {
        ops::select(ops::zeros({3, 4}), 0, 5);
      },
      {"select", "index 5 out of range", "[3, 4]"});
  expect_error([&] { ops::narrow(ops::zeros({5}), 0, 4, 2); },
               {"narrow", "start (4) + length (2) exceeds dimension size (5)"});
  expect_error([&] { ops::narrow(ops::zeros({5}), 0, 7, 0); }, {"narrow", "start out of range"});
  expect_error(
      [&] {
        ops::as_strided(ops::zeros({4}), {3, 3}, {1, 1}, 0);
      },
      {"as_strided", "requiring a storage size of 20", "storage of size 16"});
  expect_error([&] { ops::slice(x, 0, 0, 2, 0); }, {"slice", "step must be positive"});
  expect_error([&] { ops::unfold(ops::zeros({3}), 0, 4, 1); },
               {"unfold", "maximum size for tensor at dimension 0 is 3 but size is 4"});
  expect_error([&] { ops::diagonal(x, 0, 0, 0); }, {"diagonal", "cannot be identical"});
  expect_error([&] { ops::permute(x, {0, 0}); }, {"permute", "duplicate dims"});
  expect_error([&] { ops::t(ops::zeros({2, 2, 2})); }, {"t:", "3D"});
  // Writes PyTorch refuses: into an expanded tensor, and from a tensor that shares part of the
  // written one's memory with another layout; the written tensor keeps its values.
  Tensor e = ops::expand(constant({1, 2, 3}, {1, 3}), {2, 3});
  expect_error([&] { ops::mul_(e, constant({2}, {1})); },
               {"mul_", "more than one element of the written-to tensor"});
  // copy_ of an expanded tensor's own data returns before the check, as PyTorch's (same sizes,
  // strides and offset); a view of it with other strides on a size-1 dim is not the same data.
  Tensor wide = ops::expand(constant({1, 2}, {2}), {2, 1, 2});
  ops::copy_(wide, ops::view(wide, {2, 1, 2}));
  Tensor rows = ops::expand(ops::unfold(constant({1, 2}, {2}), 0, 2, 1), {2, 1, 2});
  EXPECT_EQ(ops::unfold(constant({1, 2}, {2}), 0, 2, 1).strides(), Shape({1, 1}));
  EXPECT_TRUE(ops::unfold(constant({1, 2}, {2}), 0, 2, 1).is_contiguous());
  EXPECT_EQ(rows.strides(), Shape({0, 1, 1}));
  expect_error(
      [&] {
        ops::copy_(rows, ops::view(rows, {2, 1, 2}));
      },
      {"copy_", "more than one element of the written-to tensor"});
  Tensor y = constant({0, 1, 2, 3, 4, 5}, {6});
  Tensor tail = ops::slice(y, 0, 1, 6), head = ops::slice(y, 0, 0, 5);
  expect_error([&] { ops::copy_(tail, head); }, {"copy_", "some elements of the input tensor"});
  Tensor sq = constant({0, 1, 2, 3}, {2, 2});
  expect_error([&] { ops::mul_(sq, ops::t(sq)); }, {"mul_", "some elements"});
  expect_values(sq, {0, 1, 2, 3}, "unchanged");
  // Gapped layouts pass, as in PyTorch (x[::2] += x[1::2]); so does a write of a tensor into
  // itself.
  Tensor even = ops::slice(y, 0, 0, 6, 2), odd = ops::slice(y, 0, 1, 6, 2);
  ops::add_(even, odd);
  expect_values(y, {1, 1, 5, 3, 9, 5}, "interleaved add");
  ops::mul_(sq, sq);
  expect_values(sq, {0, 1, 4, 9}, "squared in place");
}

// PyTorch's CreationMeta refusals of in-place writes through views.
TEST(StridedViews, CreationMetaErrors) {
  Tensor a = leaf({1, 1, 1}, {3});
  expect_error(
      [&] {
        Tensor v = ops::slice(a, 0, 0, 1);
        ops::mul_(v, constant({2}, {1}));
      },
      {"mul_", "view of a leaf tensor that requires grad"});
  Tensor b = ops::mul(leaf({1, 1, 1, 1}, {4}), 1.0);
  for (auto parts : {ops::split(b, 2), ops::chunk(b, 2), ops::unbind(ops::reshape(b, {2, 2}))}) {
    expect_error([&] { ops::mul_(parts[0], constant({2}, {1})); },
                 {"mul_", "split, chunk or unbind"});
  }
  expect_values(b, {1, 1, 1, 1}, "b unchanged");
  // Without a recorded write, multi-output views may be written, as in PyTorch.
  Tensor plain = ops::ones({4}, DType::kFloat64);
  std::vector<Tensor> halves = ops::split(plain, 2);
  ops::mul_(halves[0], constant({2}, {1}));
  expect_values(plain, {2, 2, 1, 1}, "split of a tensor that does not require grad");
  Tensor c = ops::mul(leaf({1, 1, 1}, {3}), 1.0);
  Tensor under_no_grad;
  {
    NoGradGuard no_grad;
    under_no_grad = ops::slice(c, 0, 0, 2);
  }
  expect_error([&] { ops::mul_(under_no_grad, constant({2}, {1})); },
               {"mul_", "made with grad mode off"});
}

}  // namespace
}  // namespace ag
