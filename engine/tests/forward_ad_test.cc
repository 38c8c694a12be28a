// Forward mode (Note [Forward mode], engine/forward_ad.h): dual tensors, tangents through views and
// in-place ops, nested levels, errors; each value pinned to PyTorch 2.15 where PyTorch has the
// case (torch.autograd.forward_ad; the script is in the comment above each test).

#include "engine/forward_ad.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/function.h"
#include "engine/memory/allocator.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_error;

Tensor vec(std::vector<double> v) {
  const auto n = static_cast<int64_t>(v.size());
  return ops::from_vector(v, {n}, DType::kFloat64);
}

// p = [1, 2, 3]; t = [.5, -1, 2]; d = make_dual(p, t)
// unpack_dual(d).tangent is t; d._base is p
TEST(ForwardAd, MakeDualKeepsTheTangentAndViewsThePrimal) {
  DualLevel level;
  const Tensor p = vec({1, 2, 3}), t = vec({.5, -1, 2});
  const Tensor d = make_dual(p, t);
  EXPECT_TRUE(unpack_dual(d).tangent.is_same(t));
  EXPECT_TRUE(d.is_view());
  EXPECT_TRUE(d.base().is_same(p));
  EXPECT_EQ(unpack_dual(d).primal.to_vector(), p.to_vector());
  EXPECT_FALSE(unpack_dual(p).tangent.defined());
}

// v = d[1:]; unpack_dual(v).tangent == [-1, 2]; v.mul_(3.0): d's tangent (and t) [.5, -3, 6]
TEST(ForwardAd, AWriteThroughAViewOfADualWritesItsTangent) {
  DualLevel level;
  const Tensor p = vec({1, 2, 3}), t = vec({.5, -1, 2});
  const Tensor d = make_dual(p, t);
  Tensor v = ops::slice(d, 0, 1, 3, 1);
  EXPECT_EQ(unpack_dual(v).tangent.to_vector(), (std::vector<double>{-1, 2}));
  ops::mul_(v, ops::mul(ops::ones_like(v), 3.0));
  EXPECT_EQ(unpack_dual(d).tangent.to_vector(), (std::vector<double>{.5, -3, 6}));
  EXPECT_EQ(t.to_vector(), (std::vector<double>{.5, -3, 6}));
}

// base = zeros(4); base[1:].copy_(d): base's tangent [0, .5, -1, 2];
// q = ones(3); q.mul_(d): q's tangent [.5, -1, 2]
TEST(ForwardAd, AnInPlaceOpWithADualOperandGivesItsTargetATangent) {
  DualLevel level;
  const Tensor d = make_dual(vec({1, 2, 3}), vec({.5, -1, 2}));
  Tensor base = ops::zeros({4}, DType::kFloat64);
  Tensor slice = ops::slice(base, 0, 1, 4, 1);
  ops::copy_(slice, d);
  EXPECT_EQ(unpack_dual(base).tangent.to_vector(), (std::vector<double>{0, .5, -1, 2}));
  EXPECT_EQ(unpack_dual(slice).tangent.to_vector(), (std::vector<double>{.5, -1, 2}));
  Tensor q = ops::ones({3}, DType::kFloat64);
  ops::mul_(q, d);
  EXPECT_EQ(unpack_dual(q).tangent.to_vector(), (std::vector<double>{.5, -1, 2}));
}

// exp(d).sum(): tangent sum(exp(p) * t); detach() carries no tangent
TEST(ForwardAd, OpsCarryTangentsAndDetachDropsThem) {
  DualLevel level;
  const Tensor d = make_dual(vec({1, 2, 3}), vec({.5, -1, 2}));
  const Tensor s = ops::sum(ops::exp(d));
  const double expected = std::exp(1) * .5 - std::exp(2) + std::exp(3) * 2;
  EXPECT_NEAR(unpack_dual(s).tangent.item(), expected, 1e-12);
  EXPECT_FALSE(unpack_dual(d.detach()).tangent.defined());
  EXPECT_FALSE(unpack_dual(ops::detach(d)).tangent.defined());
}

// make_dual(p, ones(2)): "Trying to set a forward gradient that has a different size ..."; and
// outside a level: "Trying to create a dual Tensor for forward AD but no level exists"
TEST(ForwardAd, BadTangentsAndMissingLevelsRaise) {
  const Tensor p = vec({1, 2, 3});
  expect_error([&] { (void)make_dual(p, vec({1, 2, 3})); }, {"no dual level is live"});
  DualLevel level;
  expect_error([&] { (void)make_dual(p, vec({1, 2})); }, {"different size"});
  expect_error([&] { (void)make_dual(p, ops::ones({3}, DType::kFloat32)); }, {"dtype"});
}

// Outside any level: fwAD.unpack_dual(p) is (p, None), p itself (found by the conformance corpus,
// programs/forward/forward.txt: the engine raised).
TEST(ForwardAd, UnpackDualOutsideALevelGivesTheTensorAndNoTangent) {
  const Tensor p = vec({1, 2, 3});
  const UnpackedDual u = unpack_dual(p);
  EXPECT_TRUE(u.primal.is_same(p));
  EXPECT_FALSE(u.tangent.defined());
}

// d = make_dual(p, t); fwAD.make_dual(d * 2, t): "Making a dual Tensor based on a Tensor that
// already has a forward gradient at the same level 0 is not supported." (found by the
// conformance corpus: the engine replaced the tangent)
TEST(ForwardAd, MakeDualOfATensorThatHasATangentRaises) {
  DualLevel level;
  const Tensor t = vec({.5, -1, 2});
  const Tensor d = make_dual(vec({1, 2, 3}), t);
  expect_error([&] { (void)make_dual(ops::mul(d, 2.0), t); }, {"already has a forward gradient"});
  expect_error([&] { (void)make_dual(d, t); }, {"already has a forward gradient"});
}

// Levels end with their scope: a dual's tangent is not read after its level.
TEST(ForwardAd, TangentsEndWithTheirLevel) {
  Tensor d;
  {
    DualLevel level;
    d = make_dual(vec({1, 2}), vec({3, 4}));
  }
  DualLevel next;
  EXPECT_FALSE(unpack_dual(d).tangent.defined());
  EXPECT_FALSE(unpack_dual(ops::mul(d, d)).tangent.defined());
}

// A level's end drops the tangents it gave (as PyTorch's dual_level exit resets every forward
// grad of the level): a tensor kept past it holds no tangent's memory, and a forward-over-reverse
// graph, whose tangents read the results that carry them (tanh's 1 - y^2), frees all it made once
// its handles go, with no reference cycle through a result and its tangent's history.
TEST(ForwardAd, TheEndOfALevelFreesItsTangents) {
  const int64_t before = live_bytes();
  Tensor kept;
  {
    DualLevel level;
    Tensor w = ops::uniform({64, 64}, -1, 1, 1, DType::kFloat64);
    w.set_requires_grad(true);
    Tensor x = ops::uniform({8, 64}, -1, 1, 2, DType::kFloat64);
    x.set_requires_grad(true);
    const Tensor xd = make_dual(x, ops::ones_like(x));
    const Tensor y = ops::sum(ops::tanh(ops::mm(xd, w)));
    const Tensor g = grad({y}, {xd}, GradArgs().create_graph())[0];
    ASSERT_TRUE(unpack_dual(g).tangent.defined());
    kept = ops::tanh(ops::mm(xd, w));  // [8, 64], its tangent [8, 64] too
  }
  ASSERT_FALSE(unpack_dual(kept).tangent.defined());
  const int64_t one = 8 * 64 * 8;
  // kept, its saved result (the same storage), and mm's saved x and w of its history.
  EXPECT_EQ(live_bytes(), before + one + one + 64 * 64 * 8);
  kept = Tensor();
  EXPECT_EQ(live_bytes(), before);
}

// Forward over forward (nested levels): d2/dx2 sin(x) = -sin(x), from the inner tangent's outer
// tangent.
TEST(ForwardAd, NestedLevelsGiveSecondDerivatives) {
  DualLevel outer;
  const Tensor x = make_dual(vec({0.3, 1.2}), vec({1, 1}), outer.index());
  DualLevel inner;
  const Tensor xx = make_dual(x, vec({1, 1}), inner.index());
  const Tensor y = ops::sin(xx);
  const Tensor dy = unpack_dual(y, inner.index()).tangent;  // cos(x), carrying -sin(x)
  ASSERT_TRUE(dy.defined());
  const Tensor d2y = unpack_dual(dy, outer.index()).tangent;
  ASSERT_TRUE(d2y.defined());
  EXPECT_NEAR(d2y.to_vector()[0], -std::sin(0.3), 1e-12);
  EXPECT_NEAR(d2y.to_vector()[1], -std::sin(1.2), 1e-12);
}

// Forward over reverse: the gradient taken inside a level carries H u. f = sum(x^3): H = 6x.
TEST(ForwardAd, AGradientTakenInsideALevelCarriesTheHessianVectorProduct) {
  Tensor x = vec({1, -2, 0.5});
  x.set_requires_grad(true);
  DualLevel level;
  const Tensor xd = make_dual(x, vec({1, 2, 3}));
  const Tensor f = ops::sum(ops::mul(ops::mul(xd, xd), xd));
  const Tensor g = grad({f}, {xd})[0];
  EXPECT_EQ(g.to_vector(), (std::vector<double>{3, 12, 0.75}));
  EXPECT_EQ(unpack_dual(g).tangent.to_vector(), (std::vector<double>{6, -24, 9}));
}

// The conformance corpus' forward-mode programs (corpus/forward.txt) found the three below, and
// the API model's dual levels the fourth.

// p = tensor([.5, -1.], requires_grad=True); d = make_dual(p, [1., 2.]); y = sigmoid(d)
// unpack_dual(y).tangent: requires_grad True, is_leaf False (PyTorch sets y's history before it
// computes y's tangent, whose formula reads y); y's tangent [0.2350037122015945,
// 0.3932238664829637]
TEST(ForwardAd, ATangentComputedFromAResultWithAHistoryRequiresGrad) {
  Tensor p = vec({.5, -1});
  p.set_requires_grad(true);
  DualLevel level;
  const Tensor y = ops::sigmoid(make_dual(p, vec({1, 2})));
  const Tensor yt = unpack_dual(y).tangent;
  EXPECT_TRUE(yt.requires_grad());
  EXPECT_FALSE(yt.is_leaf());
  EXPECT_NEAR(yt.to_vector()[0], 0.2350037122015945, 1e-15);
  EXPECT_NEAR(yt.to_vector()[1], 0.3932238664829637, 1e-15);
}

// t = tensor([1., 2., 3.]); d = make_dual(zeros(3), t)
// y = torch.add(ones(3), d): unpack_dual(y).tangent is not t; t.mul_(10): y's tangent [1, 2, 3]
// z = torch.add(ones(2, 3), d); z.mul_(2.0): t stays [10, 20, 30], z's tangent [[20, 40, 60]] * 2
// w = d + 0.5 (add.Scalar): its tangent is not t either
TEST(ForwardAd, AnOpsTangentIsItsOwnNotItsInputs) {
  DualLevel level;
  Tensor t = vec({1, 2, 3});
  const Tensor d = make_dual(ops::zeros({3}, DType::kFloat64), t);
  const Tensor y = ops::add(ops::ones({3}, DType::kFloat64), d);
  EXPECT_FALSE(unpack_dual(y).tangent.is_same(t));
  EXPECT_FALSE(unpack_dual(ops::add(d, 0.5)).tangent.is_same(t));
  ops::mul_(t, ops::mul(ops::ones({3}, DType::kFloat64), 10.0));
  EXPECT_EQ(unpack_dual(y).tangent.to_vector(), (std::vector<double>{1, 2, 3}));
  Tensor z = ops::add(ops::ones({2, 3}, DType::kFloat64), d);  // a broadcast tangent
  ops::mul_(z, ops::mul(ops::ones({2, 3}, DType::kFloat64), 2.0));
  EXPECT_EQ(t.to_vector(), (std::vector<double>{10, 20, 30}));
  EXPECT_EQ(unpack_dual(z).tangent.to_vector(), (std::vector<double>{20, 40, 60, 20, 40, 60}));
}

// tl = tensor([1., 2., 3., 4.], requires_grad=True); d = make_dual(tensor([1., 2., 3., 4.]), tl *
// 1) unpack_dual(d.split(2)[0]).tangent: requires_grad True, is_leaf False (SplitBackward0); so for
// d.unbind(0)[1] (UnbindBackward0, 2.0) and d.chunk(2)[1] (SplitBackward0, [3., 4.])
TEST(ForwardAd, TheTangentsOfSplitsPiecesHaveAHistory) {
  Tensor tl = vec({1, 2, 3, 4});
  tl.set_requires_grad(true);
  DualLevel level;
  const Tensor d = make_dual(vec({1, 2, 3, 4}), ops::mul(tl, 1.0));
  const Tensor split = unpack_dual(ops::split(d, 2)[0]).tangent;
  EXPECT_TRUE(split.requires_grad());
  EXPECT_FALSE(split.is_leaf());
  const Tensor unbound = unpack_dual(ops::unbind(d, 0)[1]).tangent;
  EXPECT_FALSE(unbound.is_leaf());
  EXPECT_EQ(unbound.item(), 2.0);
  const Tensor chunk = unpack_dual(ops::chunk(d, 2)[1]).tangent;
  EXPECT_FALSE(chunk.is_leaf());
  EXPECT_EQ(chunk.to_vector(), (std::vector<double>{3, 4}));
}

// Inside a level, backward() still sums into an existing .grad in place, as PyTorch's
// AccumulateGrad: a held .grad sees the sum and its version moves; a dual gradient gives the
// .grad a tangent (x = [1, 2]; y = sum(xd * xd), xd's tangent u = [1, -1]: x.grad = 2x, its
// tangent 2u).
TEST(ForwardAd, BackwardInsideALevelSumsIntoTheGradInPlace) {
  Tensor x = vec({1, 2});
  x.set_requires_grad(true);
  backward(ops::sum(x));
  const Tensor held = x.grad();
  const uint32_t version = held.version();
  DualLevel level;
  const Tensor xd = make_dual(x, vec({1, -1}));
  backward(ops::sum(ops::mul(xd, xd)));
  EXPECT_TRUE(x.grad().is_same(held));
  EXPECT_EQ(held.version(), version + 1);
  EXPECT_EQ(held.to_vector(), (std::vector<double>{3, 5}));
  ASSERT_TRUE(unpack_dual(held).tangent.defined());
  EXPECT_EQ(unpack_dual(held).tangent.to_vector(), (std::vector<double>{2, -2}));
}

// d = make_dual(3., 1.); d.mul_(d): the tangent is d(x^2) = 2 x dx = 6, as PyTorch's out-of-place
// d * d gives. PyTorch 2.15's in-place formula gives 12 (paper/results/foreign_findings.md, F5):
// here the jvp is taken from the values before the write (tangents_of_write), so the product with
// itself has the out-of-place product's tangent.
TEST(ForwardAd, AnInPlaceProductWithItselfHasTheOutOfPlaceTangent) {
  DualLevel level;
  Tensor d = make_dual(vec({3}), vec({1}));
  const Tensor e = ops::mul(d, d);
  ops::mul_(d, d);
  EXPECT_EQ(d.to_vector(), (std::vector<double>{9}));
  EXPECT_EQ(unpack_dual(e).tangent.to_vector(), (std::vector<double>{6}));
  EXPECT_EQ(unpack_dual(d).tangent.to_vector(), (std::vector<double>{6}));
}

// Note [Zero tangent terms] (ops/jvp.h): mul's formula `self_t * other_p + other_t * self_p` runs
// whole, other_t a zero tensor, so the tangent has self_p's history.
// x = tensor([1., 2.], requires_grad=True); t = unpack_dual(make_dual(x, [.5, -1.]) * [3., 4.])
// .tangent: requires_grad True, is_leaf False, [1.5, -4.]; grad(t.sum(), x): [0., 0.]
// a = tensor([[1., 2.]], requires_grad=True); mm(a, make_dual([[3.], [4.]], [[1.], [2.]])):
// tangent requires_grad True, [[5.]]; with neither requiring grad, requires_grad False
TEST(ForwardAd, AZeroTangentsTermRecordsThePrimalsHistory) {
  Tensor x = vec({1, 2});
  x.set_requires_grad(true);
  DualLevel level;
  const Tensor t = unpack_dual(ops::mul(make_dual(x, vec({.5, -1})), vec({3, 4}))).tangent;
  EXPECT_TRUE(t.requires_grad());
  EXPECT_FALSE(t.is_leaf());
  EXPECT_EQ(t.to_vector(), (std::vector<double>{1.5, -4}));
  EXPECT_EQ(grad({ops::sum(t)}, {x})[0].to_vector(), (std::vector<double>{0, 0}));
  Tensor a = ops::from_vector({1, 2}, {1, 2}, DType::kFloat64);
  a.set_requires_grad(true);
  const Tensor b = ops::from_vector({3, 4}, {2, 1}, DType::kFloat64);
  const Tensor tb = ops::from_vector({1, 2}, {2, 1}, DType::kFloat64);
  const Tensor m = unpack_dual(ops::mm(a, make_dual(b, tb))).tangent;
  EXPECT_TRUE(m.requires_grad());
  EXPECT_EQ(m.to_vector(), (std::vector<double>{5}));
  EXPECT_FALSE(unpack_dual(ops::mul(vec({5, 6}), make_dual(vec({1, 2}), vec({1, 1}))))
                   .tangent.requires_grad());
}

// Note [Tangents of views] (forward_ad.cc): a write into a view whose tangent lives on its base.
// x = tensor([2.], requires_grad=True); base = x.sum(0); v = base.unsqueeze(0)
// v.mul_(make_dual(tensor(3., requires_grad=True), tensor(.5)))
// unpack_dual(base).tangent and unpack_dual(v).tangent: requires_grad True, is_leaf False, 1.0;
// tm = unpack_dual(v.mean()).tangent: requires_grad True, 1.0; grad(tm, x): [.5]
TEST(ForwardAd, AWriteIntoAViewIsRecordedOnItsBasesTangent) {
  Tensor x = vec({2});
  x.set_requires_grad(true);
  Tensor p = ops::from_vector({3}, {}, DType::kFloat64);
  p.set_requires_grad(true);
  DualLevel level;
  const Tensor base = ops::sum(x, 0, false);
  Tensor v = ops::unsqueeze(base, 0);
  ops::mul_(v, make_dual(p, ops::from_vector({.5}, {}, DType::kFloat64)));
  for (const Tensor& t : {unpack_dual(base).tangent, unpack_dual(v).tangent}) {
    EXPECT_TRUE(t.requires_grad());
    EXPECT_FALSE(t.is_leaf());
    EXPECT_EQ(t.to_vector(), (std::vector<double>{1}));
  }
  const Tensor tm = unpack_dual(ops::mean(v)).tangent;
  EXPECT_TRUE(tm.requires_grad());
  EXPECT_EQ(tm.to_vector(), (std::vector<double>{1}));
  EXPECT_EQ(grad({tm}, {x})[0].to_vector(), (std::vector<double>{.5}));
}

// A view made under no_grad of a view whose tangent has history: as PyTorch's no_grad views, its
// tangent requires grad and is a leaf.
// dd = make_dual(tensor(.25, requires_grad=True), tensor(-2.)); z = tensor([3.]); z.mul_(dd)
// w = z[0:1]; with no_grad: n = w.narrow(0, 0, 1)
// unpack_dual(n).tangent: requires_grad True, is_leaf True, [-6.]
TEST(ForwardAd, AViewMadeUnderNoGradOfATangentWithHistoryRequiresGrad) {
  Tensor p = ops::from_vector({.25}, {}, DType::kFloat64);
  p.set_requires_grad(true);
  DualLevel level;
  const Tensor dd = make_dual(p, ops::from_vector({-2}, {}, DType::kFloat64));
  Tensor z = vec({3});
  ops::mul_(z, dd);
  EXPECT_TRUE(unpack_dual(z).tangent.requires_grad());
  const Tensor w = ops::slice(z, 0, 0, 1, 1);
  Tensor n;
  {
    NoGradGuard no_grad;
    n = ops::narrow(w, 0, 0, 1);
  }
  const Tensor tn = unpack_dual(n).tangent;
  EXPECT_TRUE(tn.requires_grad());
  EXPECT_TRUE(tn.is_leaf());
  EXPECT_EQ(tn.to_vector(), (std::vector<double>{-6}));
}

struct Twice : Function<Twice> {
  static constexpr const char* name = "Twice";
  static TensorList forward(ForwardCtx&, const TensorList& in) { return {ops::mul(in[0], 2.0)}; }
  static TensorList backward(BackwardCtx&, const TensorList& g) { return {ops::mul(g[0], 2.0)}; }
};

// A custom Function declares no jvp: PyTorch raises "jvp is not implemented".
TEST(ForwardAd, ACustomFunctionRefusesATangent) {
  DualLevel level;
  const Tensor d = make_dual(vec({1, 2}), vec({3, 4}));
  expect_error([&] { (void)Twice::apply({d}); }, {"jvp"});
  EXPECT_EQ(Twice::apply({vec({1, 2})})[0].to_vector(), (std::vector<double>{2, 4}));
}

// PyTorch 2.15 copies a tangent into its primal's strides unless it has the primal's layout
// already: an expanded primal with a contiguous tangent raises the overlap error, with a tangent
// of the same layout it is kept (found by the API model: the engine kept [-2, -1.875] for a
// primal whose two elements are one).
TEST(ForwardAd, AnExpandedPrimalTakesOnlyATangentOfItsLayout) {
  DualLevel level;
  const Tensor primal = ops::expand(ops::from_vector({-2}, {}, DType::kFloat64), {2});
  expect_error(
      [&] {
        (void)make_dual(primal, vec({-2, -1.875}));
      },
      {"make_dual", "more than one element of the written-to tensor"});
  const Tensor same = ops::expand(ops::from_vector({3}, {1}, DType::kFloat64), {2});
  const Tensor d = make_dual(primal, same);
  EXPECT_EQ(unpack_dual(d).tangent.to_vector(), (std::vector<double>{3, 3}));
  EXPECT_EQ(unpack_dual(ops::mul(d, 2.0)).tangent.to_vector(), (std::vector<double>{6, 6}));
}

// A view of a dual tensor views its tangent, also when made under no_grad: a write into the dual
// tensor's tangent reaches it (found by the API model: the expanded view kept the old tangent).
// t0 = tensor([-2.], requires_grad=True); d = make_dual(t0.mean(), tensor(-2.))
// e = d.expand([3]) (under no_grad or not); d.mul_(tensor(3.)) (the same)
// unpack_dual(d).tangent: -6; unpack_dual(e).tangent: [-6, -6, -6]
TEST(ForwardAd, AViewOfADualTensorSeesAWriteIntoItsTangent) {
  for (const bool no_grad : {false, true}) {
    Tensor t0 = vec({-2});
    t0.set_requires_grad(true);
    DualLevel level;
    Tensor d = make_dual(ops::mean(t0), ops::from_vector({-2}, {}, DType::kFloat64));
    std::optional<NoGradGuard> guard;
    if (no_grad) guard.emplace();
    const Tensor e = ops::expand(d, {3});
    ops::mul_(d, ops::from_vector({3}, {}, DType::kFloat64));
    EXPECT_EQ(unpack_dual(d).tangent.to_vector(), (std::vector<double>{-6})) << no_grad;
    EXPECT_EQ(unpack_dual(e).tangent.to_vector(), (std::vector<double>{-6, -6, -6})) << no_grad;
  }
}

// make_dual's result is no forward view of its primal (PyTorch's _make_dual): in a later level,
// where it has no tangent, an in-place op gives it (not its primal) one, which its views read
// (found by the API model: the engine gave the primal a zero tangent).
// t0 = full((3,), -2.)
// with dual_level(): t11 = make_dual(t0, full((3,), -2.))
// with dual_level(): t12 = make_dual(t0, full((3,), -2.)); v = t11[1:]; t11.mul_(t12)
// unpack_dual: t0 None, t11 [4, 4, 4], v [4, 4]
TEST(ForwardAd, AMakeDualResultFromAnEarlierLevelTakesTheTangentOfAWrite) {
  const Tensor t0 = vec({-2, -2, -2});
  Tensor t11;
  {
    DualLevel level;
    t11 = make_dual(t0, vec({-2, -2, -2}));
  }
  DualLevel level;
  const Tensor t12 = make_dual(t0, vec({-2, -2, -2}));
  const Tensor v = ops::slice(t11, 0, 1, 3, 1);
  ops::mul_(t11, t12);
  EXPECT_FALSE(unpack_dual(t0).tangent.defined());
  EXPECT_EQ(unpack_dual(t11).tangent.to_vector(), (std::vector<double>{4, 4, 4}));
  EXPECT_EQ(unpack_dual(v).tangent.to_vector(), (std::vector<double>{4, 4}));
  EXPECT_FALSE(unpack_dual(unpack_dual(t11).primal).tangent.defined());
}

// Forward over reverse through a write into a make_dual result (a view of its primal with a
// history): mul_'s saved old self carries the view's own tangent, so the gradient of the other
// operand does (found by the API model, seed 9: the engine saved self without it).
// x = ones(3, requires_grad=True); t1 = x * 2; t5 = x * 3
// with dual_level(): t7 = make_dual(t1, full((3,), -2.)); t7.mul_(t5)
//   g, = grad(t7.sum(), t5) -> g = [2, 2, 2], unpack_dual(g).tangent = [-2, -2, -2]
TEST(ForwardAd, AWriteIntoAMakeDualResultSavesItsTangent) {
  Tensor x = vec({1, 1, 1});
  x.set_requires_grad(true);
  const Tensor t1 = ops::mul(x, vec({2, 2, 2})), t5 = ops::mul(x, vec({3, 3, 3}));
  DualLevel level;
  Tensor t7 = make_dual(t1, vec({-2, -2, -2}));
  ops::mul_(t7, t5);
  const Tensor g = grad({ops::sum(t7)}, {t5})[0];
  EXPECT_EQ(g.to_vector(), (std::vector<double>{2, 2, 2}));
  ASSERT_TRUE(unpack_dual(g).tangent.defined());
  EXPECT_EQ(unpack_dual(g).tangent.to_vector(), (std::vector<double>{-2, -2, -2}));
}

// Note [Written through a view] (ops/spec.cc): the gradient a write through a view hands the
// base's old history is the incoming gradient with the written part replaced, as PyTorch's
// CopySlices makes it, so it carries the incoming gradient's tangent (zeros where written), also
// where the write covers the whole base (found by the API model, seeds 15 and 19: the engine's
// carried none).
// t0 = tensor(-2., float64, requires_grad=True); t1 = t0.reshape((1,)); t2 = t1 / t0; t14 = -t2
// with dual_level(): t15 = t14 + t2; t16 = make_dual(t15, [-2.]); t16.copy_(t0)
//   g, = grad([t16], [t1], grad_outputs=[t16]) -> g = [-0.], unpack_dual(g).tangent = [-0.]
TEST(ForwardAd, AWriteThroughAViewHandsTheBasesOldHistoryTheIncomingTangent) {
  Tensor t0 = ops::from_vector({-2}, {}, DType::kFloat64);
  t0.set_requires_grad(true);
  const Tensor t1 = ops::reshape(t0, {1});
  const Tensor t2 = ops::div(t1, t0);
  const Tensor t14 = ops::neg(t2);
  DualLevel level;
  Tensor t16 = make_dual(ops::add(t14, t2), ops::from_vector({-2}, {1}, DType::kFloat64));
  ops::copy_(t16, t0);
  const Tensor g = grad({t16}, {t1}, GradArgs().grad_outputs({t16}))[0];
  ASSERT_EQ(g.to_vector().size(), 1u);
  EXPECT_EQ(g.to_vector()[0], 0.0);
  EXPECT_TRUE(std::signbit(g.to_vector()[0]));
  const Tensor tangent = unpack_dual(g).tangent;
  ASSERT_TRUE(tangent.defined());
  EXPECT_EQ(tangent.to_vector()[0], 0.0);
  EXPECT_TRUE(std::signbit(tangent.to_vector()[0]));
}

// A write into a zero-size view whose base has no storage: the view's tangent is an as_strided
// view of the base's tangent at an offset beyond that empty storage, which PyTorch allows for a
// result with no elements (found by the API model, seed 9: the engine raised "out of bounds").
// t0 = zeros(0, 1, 2); with dual_level(): with no_grad: t4, t5 = t0.unbind(-1)
// t8 = make_dual(t5, zeros(0, 1)); with no_grad: t4.add_(t8)  -> t4 and t0 get empty tangents
TEST(ForwardAd, AWriteIntoAZeroSizeViewOfEmptyStorage) {
  const Tensor t0 = ops::zeros({0, 1, 2});
  DualLevel level;
  std::vector<Tensor> parts;
  {
    NoGradGuard no_grad;
    parts = ops::unbind(t0, -1);
  }
  const Tensor t8 = make_dual(parts[1], ops::zeros({0, 1}));
  {
    NoGradGuard no_grad;
    ops::add_(parts[0], t8);
  }
  EXPECT_EQ(unpack_dual(parts[0]).tangent.shape(), (Shape{0, 1}));
  EXPECT_EQ(unpack_dual(t0).tangent.shape(), (Shape{0, 1, 2}));
}

}  // namespace
}  // namespace ag
