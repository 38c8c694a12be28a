// Views' autograd state, pinned to PyTorch 2.15 (float64): a view requires grad while its base
// does, whenever it was made; it gets a new history after any write to its storage; a view made
// under no_grad refuses what PyTorch refuses; and gradients through a regenerated view or through
// a base written through a view are new tensors (Note [View flags follow the base], Note [In-place
// ops on views], Note [Written through a view] in ops/views.h). Each case was found by the
// conformance corpus or `fuzz --against pytorch`; the comments give the PyTorch program.
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

// x = torch.tensor([1., 2., 3., 4.], requires_grad=True)
// with torch.no_grad(): v = x.view(2, 2)
// v.requires_grad, v.is_leaf -> True, True; (v * 2).sum().backward() -> x.grad, v.grad None;
// grad((v * 3).sum(), v) and grad(v.sum(), x) raise "appears to not have been used in the graph";
// backward([v], ...) raises "element 0 of tensors does not require grad and does not have a
// grad_fn"; backward(inputs=[v]) gives v.grad None.
TEST(NoGradViews, AViewOfATensorThatRequiresGradRequiresGradAndIsALeaf) {
  Tensor x = leaf({1, 2, 3, 4}, {4});
  Tensor v;
  {
    NoGradGuard no_grad;
    v = ops::view(x, {2, 2});
  }
  EXPECT_TRUE(v.requires_grad());
  EXPECT_TRUE(v.is_leaf());
  Tensor y = ops::sum(ops::mul(v, 2.0));
  EXPECT_TRUE(y.requires_grad());
  backward({y});
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(v.grad().defined());
  EXPECT_NE(error_of([&] { grad({ops::sum(ops::mul(v, 3.0))}, {v}); }).find("not reachable"),
            std::string::npos);
  EXPECT_FALSE(grad({ops::sum(ops::mul(v, 3.0))}, {v}, GradArgs().allow_unused())[0].defined());
  EXPECT_NE(error_of([&] { grad({ops::sum(v)}, {x}); }).find("not reachable"), std::string::npos);
  EXPECT_NE(error_of([&] {
              backward({v}, BackwardArgs().grad_tensors({values({1, 1, 1, 1}, {2, 2})}));
            }).find("no grad_fn"),
            std::string::npos);
  backward({ops::sum(ops::mul(v, 2.0))}, BackwardArgs().inputs({v}));
  EXPECT_FALSE(v.grad().defined());
  EXPECT_FALSE(x.grad().defined());
}

// The corpus's repro: a view's backward reshapes a grad_outputs tensor that requires grad, with
// grad mode off. x = torch.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
// g = torch.tensor([1., 2., 3., 4., 5., 6.], requires_grad=True)
// r, = torch.autograd.grad(x.view(6), x, g) -> r.requires_grad True, r.is_leaf True, r shares g's
// memory.
TEST(NoGradViews, AGradResultViewingARequiresGradGradOutputRequiresGrad) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor g = leaf({1, 2, 3, 4, 5, 6}, {6});
  Tensor r = grad({ops::view(x, {6})}, {x}, GradArgs().grad_outputs({g}))[0];
  expect_values(r, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(r.requires_grad());
  EXPECT_TRUE(r.is_leaf());
  EXPECT_TRUE(shares_storage(r, g));
}

// b = torch.tensor([1., 2.]); w = torch.tensor([1., 1.], requires_grad=True)
// with torch.no_grad(): v = b.view(2)
// v.add_(w) raises "A view was created in no_grad mode and is being modified inplace with grad
// mode enabled"; so does v.view(1, 2).add_(w); under no_grad both run.
TEST(NoGradViews, ARecordedInplaceOpOnANoGradViewRaises) {
  Tensor b = values({1, 2}, {2});
  Tensor w = leaf({1, 1}, {2});
  Tensor v;
  {
    NoGradGuard no_grad;
    v = ops::view(b, {2});
  }
  Tensor u = ops::view(v, {1, 2});
  EXPECT_NE(error_of([&] { ops::add_(v, w); }).find("grad mode off"), std::string::npos);
  EXPECT_NE(error_of([&] { ops::add_(u, w); }).find("grad mode off"), std::string::npos);
  expect_values(b, {1, 2});
  EXPECT_EQ(b.version(), 0u);
  ops::add_(v, values({1, 1}, {2}));  // nothing requires grad: nothing would be recorded
  {
    NoGradGuard no_grad;
    ops::add_(v, w);
  }
  expect_values(b, {3, 4});
}

// x = torch.tensor([1., 2.], requires_grad=True)
// with torch.no_grad(): v = x.view(2)
// with torch.no_grad(): x.mul_(2)
// v.requires_grad -> True; v.is_leaf raises "A view was created in no_grad mode and its base or
// another view of its base has been modified inplace".
TEST(NoGradViews, AStaleNoGradViewCannotBeRead) {
  Tensor x = leaf({1, 2}, {2});
  Tensor v;
  {
    NoGradGuard no_grad;
    v = ops::view(x, {2});
    EXPECT_TRUE(v.is_leaf());
  }
  {
    NoGradGuard no_grad;
    ops::mul_(x, values({2, 2}, {2}));
  }
  EXPECT_TRUE(v.requires_grad());
  EXPECT_NE(error_of([&] { (void)v.is_leaf(); }).find("modified in place"), std::string::npos);
  EXPECT_THROW(ops::mul(v, x), Error);  // recording reads its grad_fn
}

// b = torch.tensor([1., 2.]); v = b.view(2); b.requires_grad_()
// v.requires_grad, v.is_leaf -> True, True; (v * 2).sum().backward() -> b.grad, v.grad None;
// b.requires_grad_(False) -> v.requires_grad False.
TEST(ViewFlags, AViewFollowsRequiresGradOnItsBase) {
  Tensor b = values({1, 2}, {2});
  Tensor v = ops::view(b, {2});
  EXPECT_FALSE(v.requires_grad());
  b.set_requires_grad(true);
  EXPECT_TRUE(v.requires_grad());
  EXPECT_TRUE(v.is_leaf());
  backward({ops::sum(ops::mul(v, 2.0))});
  EXPECT_FALSE(b.grad().defined());
  EXPECT_FALSE(v.grad().defined());
  b.set_requires_grad(false);
  EXPECT_FALSE(v.requires_grad());
}

// b = torch.tensor([1., 2.]); v = b.view(2); b.add_(1); b.requires_grad_()
// v.requires_grad, v.is_leaf -> True, False (the write left v stale; it regenerates now).
TEST(ViewFlags, AViewWrittenBeforeItsBaseRequiresGradRegeneratesThen) {
  Tensor b = values({1, 2}, {2});
  Tensor v = ops::view(b, {2});
  ops::add_(b, values({1, 1}, {2}));
  EXPECT_TRUE(v.is_leaf());
  b.set_requires_grad(true);
  EXPECT_TRUE(v.requires_grad());
  EXPECT_FALSE(v.is_leaf());
}

// x = torch.tensor([1., 2.], requires_grad=True); y = x.view(2, 1); g = torch.tensor([[3.], [4.]])
// r, = torch.autograd.grad(y, x, g) -> r.requires_grad False; g.requires_grad_() -> r.requires_grad
// True, r.is_leaf True (r is a view of g).
TEST(ViewFlags, AGradResultViewingAGradOutputFollowsItsRequiresGrad) {
  Tensor x = leaf({1, 2}, {2});
  Tensor g = values({3, 4}, {2, 1});
  Tensor r = grad({ops::view(x, {2, 1})}, {x}, GradArgs().grad_outputs({g}))[0];
  EXPECT_FALSE(r.requires_grad());
  g.set_requires_grad(true);
  EXPECT_TRUE(r.requires_grad());
  EXPECT_TRUE(r.is_leaf());
}

// The corpus's repro. x = torch.tensor([3.], requires_grad=True); v = x.view(1, 1); n = -v
// with torch.no_grad(): x.mul_(x)
// v.is_leaf False, v.grad_fn is a new node; torch.autograd.grad(n, v, torch.ones(1, 1),
// allow_unused=True) -> (None,): n was built from v's old history.
TEST(StaleViews, AViewOfALeafWrittenUnderNoGradGetsANewHistory) {
  Tensor x = leaf({3}, {1});
  Tensor v = ops::view(x, {1, 1});
  const std::shared_ptr<Node> before = v.grad_fn();
  Tensor n = ops::neg(v);
  {
    NoGradGuard no_grad;
    ops::mul_(x, x);
  }
  EXPECT_FALSE(v.is_leaf());
  EXPECT_NE(v.grad_fn(), before);
  EXPECT_FALSE(
      grad({n}, {v}, GradArgs().grad_outputs({values({1}, {1, 1})}).allow_unused())[0].defined());
}

// x = torch.tensor([3.], requires_grad=True); v = x.view(1, 1); f = v.grad_fn
// with torch.no_grad(): v.mul_(2)
// v.grad_fn is f -> False (the view written itself regenerates too).
TEST(StaleViews, AViewWrittenItselfUnderNoGradGetsANewHistory) {
  Tensor x = leaf({3}, {1});
  Tensor v = ops::view(x, {1, 1});
  const std::shared_ptr<Node> before = v.grad_fn();
  {
    NoGradGuard no_grad;
    ops::mul_(v, values({2}, {1, 1}));
  }
  EXPECT_FALSE(v.is_leaf());
  EXPECT_NE(v.grad_fn(), before);
  expect_values(x, {6});
}

// Through a detached alias, which shares the version counter.
// x = torch.tensor([3.], requires_grad=True); v = x.view(1); s = x + v; d = x.detach()
// with torch.no_grad(): d.add_(d)
// torch.autograd.grad(s, [s, v], allow_unused=True) -> (tensor([1.]), None)
TEST(StaleViews, AWriteThroughADetachedAliasRegeneratesTheViews) {
  Tensor x = leaf({3}, {1});
  Tensor v = ops::view(x, {1});
  Tensor s = ops::add(x, v);
  Tensor d = x.detach();
  {
    NoGradGuard no_grad;
    ops::add_(d, d);
  }
  TensorList g = grad({s}, {s, v}, GradArgs().allow_unused());
  expect_values(g[0], {1});
  EXPECT_FALSE(g[1].defined());
}

// b = torch.tensor([1., 2.], requires_grad=True); v = b.view(2); b.requires_grad_(False)
// with torch.no_grad(): b.add_(1)
// v.requires_grad True, v.is_leaf False, a new grad_fn (with no edge to b); (v * 2).sum() still
// requires grad.
TEST(StaleViews, AViewWithAHistoryRegeneratesAfterItsBaseStopsRequiringGrad) {
  Tensor b = leaf({1, 2}, {2});
  Tensor v = ops::view(b, {2});
  const std::shared_ptr<Node> before = v.grad_fn();
  b.set_requires_grad(false);
  {
    NoGradGuard no_grad;
    ops::add_(b, values({1, 1}, {2}));
  }
  EXPECT_TRUE(v.requires_grad());
  EXPECT_FALSE(v.is_leaf());
  EXPECT_NE(v.grad_fn(), before);
  EXPECT_TRUE(ops::sum(ops::mul(v, 2.0)).requires_grad());
}

// Gradients through PyTorch's AsStridedBackward0 (a regenerated view) and CopySlices (a base
// written through a view) are new tensors. x = torch.tensor([1., 2.], requires_grad=True)
// w = torch.tensor([5., 7.], requires_grad=True); go = torch.tensor([3., 4.], requires_grad=True)
// a = x * 1.0; v = a.view(2); a.add_(w); r, = torch.autograd.grad(v, a, go)
//   -> [3., 4.], requires_grad False, not sharing go's memory
// b = x * 1.0; u = b.view(2); u.add_(w); r2, = torch.autograd.grad(b, w, go)
//   -> [3., 4.], requires_grad False, not sharing go's memory
TEST(RegeneratedViews, PassOnNewGradientTensors) {
  Tensor x = leaf({1, 2}, {2});
  Tensor w = leaf({5, 7}, {2});
  Tensor go = leaf({3, 4}, {2});
  Tensor a = ops::mul(x, 1.0);
  Tensor v = ops::view(a, {2});
  ops::add_(a, w);
  Tensor r = grad({v}, {a}, GradArgs().grad_outputs({go}))[0];
  expect_values(r, {3, 4});
  EXPECT_FALSE(r.requires_grad());
  EXPECT_FALSE(shares_storage(r, go));

  Tensor b = ops::mul(x, 1.0);
  Tensor u = ops::view(b, {2});
  ops::add_(u, w);
  Tensor r2 = grad({b}, {w}, GradArgs().grad_outputs({go}))[0];
  expect_values(r2, {3, 4});
  EXPECT_FALSE(r2.requires_grad());
  EXPECT_FALSE(shares_storage(r2, go));
}

// as_strided_backward returns plain zeros for a zero-size view (the fuzzer's repro had a view of a
// custom Function's output); CopySlices still copies the incoming gradient.
// x = torch.zeros(2, 0, requires_grad=True); a = x * 1; v = a.view(0)
// with torch.no_grad(): a.add_(1)
// torch.autograd.grad(v, a, torch.zeros(0, requires_grad=True), create_graph=True)[0]
//   -> shape [2, 0], requires_grad False
// w = torch.zeros(0, requires_grad=True); b = x * 1; u = b.view(0); u.add_(w)
// torch.autograd.grad(b, w, torch.zeros(2, 0, requires_grad=True), create_graph=True)[0]
//   -> requires_grad True
TEST(RegeneratedViews, AZeroSizeRegeneratedViewPassesOnConstantZeros) {
  Tensor x = leaf({}, {2, 0});
  Tensor a = ops::mul(x, 1.0);
  Tensor v = ops::view(a, {0});
  {
    NoGradGuard no_grad;
    ops::add_(a, values({}, {2, 0}));
  }
  Tensor r = grad({v}, {a}, GradArgs().grad_outputs({leaf({}, {0})}).create_graph())[0];
  EXPECT_EQ(r.shape(), Shape({2, 0}));
  EXPECT_FALSE(r.requires_grad());

  Tensor w = leaf({}, {0});
  Tensor b = ops::mul(x, 1.0);
  Tensor u = ops::view(b, {0});
  ops::add_(u, w);
  Tensor r2 = grad({b}, {w}, GradArgs().grad_outputs({leaf({}, {2, 0})}).create_graph())[0];
  EXPECT_TRUE(r2.requires_grad());
}

// The fuzzer's repro (CopySlices writes copy_'s constant zeros into a copy of the incoming
// gradient). v0 = torch.tensor([1.], requires_grad=True); v5 = torch.tensor([2.],
// requires_grad=True); v4 = (v0 + v0).view(1); v4.copy_(v5)
// torch.autograd.grad([v4], [v5, v0], [v4], create_graph=True) -> [2.] and [0.], both requiring
// grad.
TEST(RegeneratedViews, CopyIntoAViewGivesTheBaseADifferentiableGradientUnderCreateGraph) {
  Tensor v0 = leaf({1}, {1});
  Tensor v5 = leaf({2}, {1});
  Tensor v4 = ops::view(ops::add(v0, v0), {1});
  ops::copy_(v4, v5);
  TensorList g = grad({v4}, {v5, v0}, GradArgs().grad_outputs({v4}).create_graph());
  expect_values(g[0], {2});
  expect_values(g[1], {0});
  EXPECT_TRUE(g[0].requires_grad());
  EXPECT_TRUE(g[1].requires_grad());
  // The zeros' history is the incoming gradient's: d(sum(g1))/d(v5) through it is 0.
  expect_values(grad({ops::sum(g[1])}, {v5})[0], {0});
}

// matmul's folded products end in PyTorch's _unsafe_view (or squeeze_): the result is no view,
// so a view of it regenerates from it. The fuzzer's repro:
// a = torch.tensor([2.], requires_grad=True); m = torch.matmul(a, torch.tensor([[1., 3.]]))
// v = m.view(2)
// with torch.no_grad(): m.add_(1)
// torch.autograd.grad(v.sum(), m) -> [1., 1.]; torch.autograd.grad(v.sum(), a) -> [4.]
TEST(RegeneratedViews, AViewOfAMatmulResultRegeneratesFromThatResult) {
  Tensor a = leaf({2}, {1});
  Tensor m = ops::matmul(a, values({1, 3}, {1, 2}));
  Tensor v = ops::view(m, {2});
  {
    NoGradGuard no_grad;
    ops::add_(m, values({1, 1}, {2}));
  }
  expect_values(grad({ops::sum(v)}, {m}, GradArgs().retain_graph())[0], {1, 1});
  expect_values(grad({ops::sum(v)}, {a})[0], {4});
}

// The conformance programs' view statements (issue 44) found these three.

// x = torch.zeros(0, 3, requires_grad=True)
// [t.shape for t in x.chunk(2, 0)] -> [(0, 3), (0, 3)]: chunks of an empty dim are `chunks` empty
// views (PyTorch's chunk calls split_with_sizes there), where split(x, 0) makes one.
TEST(MultiOutputViews, ChunkOfAnEmptyDimMakesEveryChunk) {
  Tensor x = leaf({}, {0, 3});
  const std::vector<Tensor> pieces = ops::chunk(x, 2, 0);
  ASSERT_EQ(pieces.size(), 2u);
  for (const Tensor& p : pieces) EXPECT_EQ(p.shape(), Shape({0, 3}));
  EXPECT_EQ(ops::chunk(x, 2, 1).size(), 2u);  // a dim of 3 in chunks of 2 and 1, as PyTorch
}

// x = torch.tensor([0.5], requires_grad=True); y = x.sigmoid()
// a, = y.split(1, 0); b = a.permute([0])
// with torch.no_grad(): b.mul_(y)
// a.requires_grad -> True; a.is_leaf and b.is_leaf raise "Output 0 of Split is a view and its base
// or another view of its base has been modified inplace. This view is the output of a function
// that returns multiple views." (handle_view_on_rebase refuses every CreationMeta but DEFAULT.)
TEST(MultiOutputViews, AStaleViewOfASplitCannotBeRead) {
  Tensor x = leaf({0.5}, {1});
  Tensor y = ops::sigmoid(x);
  Tensor a = ops::split(y, 1, 0)[0];
  Tensor b = ops::permute(a, {0});
  {
    NoGradGuard no_grad;
    ops::mul_(b, y);
  }
  EXPECT_TRUE(a.requires_grad());
  EXPECT_NE(error_of([&] { (void)a.is_leaf(); }).find("split, chunk or unbind"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)b.is_leaf(); }).find("split, chunk or unbind"), std::string::npos);
}

// x = torch.rand(3, 1, requires_grad=True); g = torch.rand(3, 1, requires_grad=True)
// r, = torch.autograd.grad(x[...], x, g) -> r is g (alias's gradient is `grad`)
// r, = torch.autograd.grad(x.permute(1, 0), x, g.view(1, 3)) -> r._base is g.view's base, and
// r.requires_grad True (a view of g made with grad mode off); the same for unsqueeze (squeeze of
// the gradient) and squeeze (unsqueeze_to: the gradient itself where no dim was dropped).
TEST(ViewGradients, PermuteSqueezeAndUnsqueezeGiveViewsOfTheGradientAndAliasTheGradient) {
  Tensor x = leaf({1, 2, 3}, {3, 1});
  Tensor g = leaf({4, 5, 6}, {3, 1});
  Tensor r = grad({ops::alias(x)}, {x}, GradArgs().grad_outputs({g}))[0];
  EXPECT_TRUE(r.is_same(g));
  const Tensor gt = ops::view(g, {1, 3});
  r = grad({ops::permute(x, {1, 0})}, {x}, GradArgs().grad_outputs({gt}))[0];
  expect_values(r, {4, 5, 6});
  EXPECT_TRUE(shares_storage(r, g));
  EXPECT_TRUE(r.requires_grad());
  r = grad({ops::unsqueeze(x, 0)}, {x}, GradArgs().grad_outputs({ops::view(g, {1, 3, 1})}))[0];
  EXPECT_TRUE(shares_storage(r, g));
  EXPECT_TRUE(r.requires_grad());
  r = grad({ops::squeeze(x)}, {x}, GradArgs().grad_outputs({ops::view(g, {3})}))[0];
  EXPECT_TRUE(shares_storage(r, g));
  EXPECT_EQ(r.shape(), Shape({3, 1}));
  // Below 2-D, t() is an alias whose gradient is a new view of the gradient (TBackward0's
  // grad.t()).
  Tensor z = leaf({1, 2}, {2});
  const Tensor gz = values({7, 8}, {2});
  r = grad({ops::t(z)}, {z}, GradArgs().grad_outputs({gz}))[0];
  EXPECT_FALSE(r.is_same(gz));
  EXPECT_TRUE(shares_storage(r, gz));
  Tensor y = leaf({1, 2}, {2});
  const Tensor gy = values({7, 8}, {2});
  EXPECT_TRUE(grad({ops::squeeze(y)}, {y}, GradArgs().grad_outputs({gy}))[0].is_same(gy));
  EXPECT_TRUE(grad({ops::squeeze(y, 0)}, {y}, GradArgs().grad_outputs({gy}))[0].is_same(gy));
}

// l = torch.tensor(0.5, requires_grad=True); x = l.clone(); e = x.expand(2)
// e.copy_(e) -> runs (copy_ returns at once for the same data), recorded: e.grad_fn is
// AsStridedBackward0 and x.grad_fn CopySlices, whose backward (grad(e.sum(), l)) raises
// "unsupported operation: more than one element of the written-to tensor refers to a single memory
// location" (it copies the write's gradient into the expanded view of the base's gradient);
// e.copy_(x.expand(2)) runs too; e.add_(e) raises that at once.
TEST(OverlappingWrites, CopyFromTheSameElementsIntoAnExpandedViewRuns) {
  Tensor l = leaf({0.5}, {});
  Tensor x = ops::clone(l);
  Tensor e = ops::expand(x, {2});
  ops::copy_(e, e);
  EXPECT_TRUE(e.requires_grad());
  EXPECT_FALSE(e.is_leaf());
  EXPECT_NE(error_of([&] { grad({ops::sum(e)}, {l}); }).find("single memory location"),
            std::string::npos);
  Tensor y = values({1.5}, {});
  Tensor f = ops::expand(y, {2});
  ops::copy_(f, ops::expand(y, {2}));
  expect_values(f, {1.5, 1.5});
  EXPECT_NE(error_of([&] { ops::add_(f, f); }).find("single memory location"), std::string::npos);
}

// As PyTorch's get_overlap_status, an operand over exactly the target's run with other strides
// is a partial overlap, refused, even where each element meets itself: strides that differ only
// in dims of size 1, a [3, 1] view of a [1, 3, 1] target, a transpose. PyTorch 2.15:
// x = torch.arange(1., 7.).reshape(3, 2, 1); u = x.unfold(0, 3, 1)  # strides (2, 1, 1, 2)
// u[0:1:3].mul_(u)  # strides (6, 1, 1, 2) -> "some elements of the input tensor and the
// written-to tensor refer to a single memory location"; a.mul_(a.view(3, 1)) for a [1, 3, 1] a,
// and y.mul_(y.t()), the same. x is unchanged.
TEST(OverlappingWrites, AnOperandOverTheSameRunWithOtherStridesIsRefused) {
  Tensor x = values({1, 2, 3, 4, 5, 6}, {3, 2, 1});
  Tensor u = ops::unfold(x, 0, 3, 1);  // [1, 2, 1, 3], strides (2, 1, 1, 2)
  Tensor v = ops::slice(u, 0, 0, 1, 3);
  EXPECT_NE(error_of([&] { ops::mul_(v, u); }).find("single memory location"), std::string::npos);
  expect_values(x, {1, 2, 3, 4, 5, 6});
  Tensor a = values({1, 2, 3}, {1, 3, 1});
  EXPECT_NE(error_of([&] {
              ops::mul_(a, ops::view(a, {3, 1}));
            }).find("single memory location"),
            std::string::npos);
  Tensor y = values({1, 2, 3, 4}, {2, 2});
  Tensor yt = ops::t(y);
  EXPECT_NE(error_of([&] { ops::mul_(y, yt); }).find("single memory location"), std::string::npos);
  // The same strides over the same run are a full overlap: the write runs.
  Tensor z = values({1, 2, 3}, {3});
  ops::mul_(z, ops::view(z, {3}));
  expect_values(z, {1, 4, 9});
}

// A write into a zero-size view keeps its history in the base's gradient under create_graph, as
// PyTorch's CopySlices copies the op's gradient into a clone of the base's (Note [A write's self
// keeps the write's history], ops/shape_ops.cc); before, the base's part was plain zeros.
// w = torch.ones(0, dtype=f64, requires_grad=True); g = torch.ones(0, dtype=f64,
// requires_grad=True) a = torch.zeros(0, ..., requires_grad=True); v = (a * 1).view([0]); v.mul_(w)
// ga, = torch.autograd.grad(v, a, g, create_graph=True) -> ga.requires_grad True, ga.shape [0]
// a = torch.zeros(3, ..., requires_grad=True); v = (a * 1).narrow(0, 1, 0); v.mul_(w)
// ga, = torch.autograd.grad(v, a, g, create_graph=True) -> ga = [0, 0, 0], requires_grad True
TEST(ZeroSizeWrites, TheBasesGradientKeepsTheWritesHistory) {
  const Tensor w = leaf({}, {0}), g = leaf({}, {0});
  Tensor a0 = leaf({}, {0});
  Tensor v0 = ops::view(ops::mul(a0, 1.0), {0});
  ops::mul_(v0, w);
  const Tensor ga0 = grad({v0}, {a0}, GradArgs().grad_outputs({g}).create_graph())[0];
  EXPECT_TRUE(ga0.requires_grad());
  EXPECT_EQ(ga0.shape(), Shape({0}));
  Tensor a3 = leaf({0, 0, 0}, {3});
  Tensor v3 = ops::narrow(ops::mul(a3, 1.0), 0, 1, 0);
  ops::mul_(v3, w);
  const Tensor ga3 = grad({v3}, {a3}, GradArgs().grad_outputs({g}).create_graph())[0];
  EXPECT_TRUE(ga3.requires_grad());
  expect_values(ga3, {0, 0, 0});
}

// PyTorch's CopySlices copies the base's gradient into new storage at the base's strides before
// anything else, so a write through a view of an expanded (detached) base makes a history whose
// backward raises the overlap error, whatever the view written, even one of no elements:
// b = x.broadcast_to([2]).detach(); b.narrow(0, 1, n).mul_(w); torch.neg(b).backward(ones(2))
// -> "unsupported operation: more than one element of the written-to tensor refers to a single
// memory location", for n = 0 and n = 1 (fuzz --against pytorch --hooks, seed 5860).
TEST(OverlappingWrites, ABackwardThroughAWriteIntoAnExpandedBaseIsRefused) {
  for (int64_t n : {0, 1}) {
    Tensor x = leaf({1.5}, {});
    Tensor b = ops::detach(ops::broadcast_to(x, {2}));
    Tensor v = ops::narrow(b, 0, 1, n);
    const Tensor w = leaf(std::vector<double>(static_cast<size_t>(n), 1.0), {n});
    ops::mul_(v, w);
    EXPECT_NE(error_of([&] {
                backward({ops::neg(b)}, BackwardArgs().grad_tensors({values({1, 1}, {2})}));
              }).find("more than one element of the written-to tensor refers to a single memory"),
              std::string::npos)
        << "n = " << n;
    EXPECT_FALSE(w.grad().defined());
  }
}

}  // namespace
}  // namespace ag
