// Custom Functions' outputs and inputs as PyTorch 2.15 makes them (float64): an input returned as
// is becomes a view of it, and every output that is a view refuses what PyTorch refuses (Note
// [Custom Function outputs], engine/function.h; Note [How a view was made], ops/views.h); an
// input that forward writes in place and marks dirty takes the Function's node as its history,
// its base too when it is a view. The values and messages are those that
// regressions/pytorch_custom_function_goldens.py prints; the comments give its programs.
#include <gtest/gtest.h>

#include <string>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/function.h"
#include "engine/grad_mode.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::error_of;
using testing::expect_error;
using testing::expect_values;
using testing::leaf;
using testing::values;

// The messages' common parts (PyTorch's, in substance).
const char* const kInCustomFunction =
    "created inside a custom Function (or because an input was returned as-is)";
const char* const kBaseWritten = "its base or another view of its base has been modified in place";
const char* const kBeingWritten = "is a view and is being modified in place";
const char* const kNoGradView = "made with grad mode off and is being modified in place";
const char* const kSeveralViews = "one of several views that one function returned";

// Returns its input as is.
struct Ident : Function<Ident> {
  static constexpr const char* name = "Ident";
  static TensorList forward(ForwardCtx&, const TensorList& in) { return {in[0]}; }
  static TensorList backward(BackwardCtx&, const TensorList& g) { return {g[0]}; }
};

// a[0:2], a view made in forward.
struct Head : Function<Head> {
  static constexpr const char* name = "Head";
  static TensorList forward(ForwardCtx&, const TensorList& in) {
    return {ops::slice(in[0], 0, 0, 2)};
  }
  static TensorList backward(BackwardCtx&, const TensorList& g) {
    return {ops::cat({g[0], ops::zeros({1}, DType::kFloat64)})};
  }
};

// (a[0:2], a[1:3]): two views made in forward.
struct Halves : Function<Halves> {
  static constexpr const char* name = "Halves";
  static TensorList forward(ForwardCtx&, const TensorList& in) {
    return {ops::slice(in[0], 0, 0, 2), ops::slice(in[0], 0, 1, 3)};
  }
  static TensorList backward(BackwardCtx&, const TensorList& g) {
    const Tensor zero = ops::zeros({1}, DType::kFloat64);
    return {ops::add(ops::cat({g[0], zero}), ops::cat({zero, g[1]}))};
  }
};

// (a, b * 2), `a` marked non-differentiable.
struct PassFirst : Function<PassFirst> {
  static constexpr const char* name = "PassFirst";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    ctx.mark_non_differentiable({in[0]});
    return {in[0], ops::mul(in[1], 2.0)};
  }
  static TensorList backward(BackwardCtx&, const TensorList& g) {
    return {Tensor(), ops::mul(g[1], 2.0)};
  }
};

// a.mul_(2), marked dirty.
struct Double_ : Function<Double_> {
  static constexpr const char* name = "Double_";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    Tensor a = in[0];
    ops::mul_(a, values({2}, {}));
    ctx.mark_dirty({a});
    return {a};
  }
  static TensorList backward(BackwardCtx&, const TensorList& g) { return {ops::mul(g[0], 2.0)}; }
};

// a.mul_(b), marked dirty; saves b and a copy of a before the write.
struct MulBy_ : Function<MulBy_> {
  static constexpr const char* name = "MulBy_";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    Tensor a = in[0];
    ctx.save_for_backward({ops::clone(a), in[1]});
    ops::mul_(a, in[1]);
    ctx.mark_dirty({a});
    return {a};
  }
  static TensorList backward(BackwardCtx& ctx, const TensorList& g) {
    const TensorList saved = ctx.saved_tensors();
    return {ops::mul(g[0], saved[1]), ops::mul(g[0], saved[0])};
  }
};

// (a.mul_(2), a * 3), `a` marked dirty.
struct DoubleAndTriple_ : Function<DoubleAndTriple_> {
  static constexpr const char* name = "DoubleAndTriple_";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    Tensor a = in[0];
    ops::mul_(a, values({2}, {}));
    ctx.mark_dirty({a});
    return {a, ops::mul(a, 3.0)};
  }
  static TensorList backward(BackwardCtx&, const TensorList& g) {
    return {ops::add(ops::mul(g[0], 2.0), ops::mul(g[1], 6.0))};
  }
};

// a.mul_(2), marked dirty, but returns a * 1.
struct DoubleNotReturned_ : Function<DoubleNotReturned_> {
  static constexpr const char* name = "DoubleNotReturned_";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    Tensor a = in[0];
    ops::mul_(a, values({2}, {}));
    ctx.mark_dirty({a});
    return {ops::mul(a, 1.0)};
  }
  static TensorList backward(BackwardCtx&, const TensorList& g) { return {ops::mul(g[0], 2.0)}; }
};

// Marks its input dirty without writing it.
struct MarkOnly_ : Function<MarkOnly_> {
  static constexpr const char* name = "MarkOnly_";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    ctx.mark_dirty({in[0]});
    return {in[0]};
  }
  static TensorList backward(BackwardCtx&, const TensorList& g) { return {g[0]}; }
};

// a.mul_(2), marked dirty and saved: backward reads the output.
struct SaveDirty_ : Function<SaveDirty_> {
  static constexpr const char* name = "SaveDirty_";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    Tensor a = in[0];
    ops::mul_(a, values({2}, {}));
    ctx.mark_dirty({a});
    ctx.save_for_backward({a});
    return {a};
  }
  static TensorList backward(BackwardCtx& ctx, const TensorList& g) {
    return {ops::mul(g[0], ctx.saved_tensors()[0])};
  }
};

// --- An input returned as is (issue 44, point 6) ---------------------------------------------

// x, z = leaf([1., 2.]), leaf([3., 4.]); a = x * 2.; o = Ident.apply(a); s = (o * 3).sum()
// a.mul_(z): o.requires_grad True; grad(o.sum(), (x, z)) and o.grad_fn raise "Output 0 of Ident is
// a view and its base or another view of its base has been modified inplace. This view was
// created inside a custom Function (or because an input was returned as-is)..."; grad(a.sum(),
// (x, z)) = [6, 8], [2, 4]; grad(s, x) = [6, 6] (a use of o before the write).
// Before the fix o was a plain alias of a: grad(o.sum(), (x, z)) gave [2, 2] and z unused.
TEST(CustomFunctionOutputs, AnInputReturnedAsIsSeesALaterWriteIntoTheInput) {
  Tensor x = leaf({1, 2}, {2}), z = leaf({3, 4}, {2});
  Tensor a = ops::mul(x, 2.0);
  Tensor o = Ident::apply({a})[0];
  EXPECT_TRUE(o.is_view());
  EXPECT_TRUE(o.base().is_same(a));
  ASSERT_NE(o.grad_fn(), nullptr);
  EXPECT_EQ(o.grad_fn()->name(), "Ident");
  EXPECT_EQ(a.grad_fn()->name(), "mul_scalar");  // the input keeps its own history
  Tensor s = ops::sum(ops::mul(o, 3.0));
  ops::mul_(a, z);
  EXPECT_TRUE(o.requires_grad());
  expect_error(
      [&] {
        grad({ops::sum(o)}, {x, z});
      },
      {"output 0 of 'Ident'", kBaseWritten, kInCustomFunction});
  expect_error([&] { (void)o.grad_fn(); }, {"output 0 of 'Ident'", kBaseWritten});
  TensorList g = grad({ops::sum(a)}, {x, z}, GradArgs().retain_graph());
  expect_values(g[0], {6, 8});
  expect_values(g[1], {2, 4});
  expect_values(grad({s}, {x})[0], {6, 6});
}

// o = Ident.apply(x * 2.): o.mul_(z) and o.mul_(tensor([5., 5.])) raise "Output 0 of Ident is a
// view and is being modified inplace. This view was created inside a custom Function..."; a is
// unchanged, at version 0. Under no_grad the write runs (a = [10, 20]); then o.grad_fn raises
// "... its base or another view of its base has been modified inplace".
TEST(CustomFunctionOutputs, AWriteThroughTheOutputIsRefused) {
  Tensor x = leaf({1, 2}, {2}), z = leaf({3, 4}, {2});
  Tensor a = ops::mul(x, 2.0);
  Tensor o = Ident::apply({a})[0];
  expect_error([&] { ops::mul_(o, z); },
               {"mul_", "output 0 of 'Ident'", kBeingWritten, kInCustomFunction});
  Tensor five = values({5, 5}, {2});
  expect_error([&] { ops::mul_(o, five); }, {"mul_", kBeingWritten, kInCustomFunction});
  expect_values(a, {2, 4});
  EXPECT_EQ(a.version(), 0u);
  {
    NoGradGuard no_grad;
    ops::mul_(o, five);
  }
  expect_values(a, {10, 20});
  expect_error([&] { (void)o.grad_fn(); }, {"output 0 of 'Ident'", kBaseWritten});
}

// x = tensor([1., 2.]) (no grad); a = x * 2.; o = Ident.apply(a): o._is_view() True,
// o.requires_grad False, o.grad_fn None; o.mul_(z) (z requires grad) raises "A view was created in
// no_grad mode and is being modified inplace with grad mode enabled. This view was created inside
// a custom Function..."; o.mul_(tensor([5., 5.])) writes a = [10, 20].
TEST(CustomFunctionOutputs, AnOutputWithoutAHistoryIsAViewMadeWithGradModeOff) {
  Tensor z = leaf({3, 4}, {2});
  Tensor a = ops::mul(values({1, 2}, {2}), 2.0);
  Tensor o = Ident::apply({a})[0];
  EXPECT_TRUE(o.is_view());
  EXPECT_FALSE(o.requires_grad());
  EXPECT_EQ(o.grad_fn(), nullptr);
  expect_error([&] { ops::mul_(o, z); }, {"mul_", kNoGradView, kInCustomFunction});
  ops::mul_(o, values({5, 5}, {2}));
  expect_values(a, {10, 20});
}

// x = leaf([1., 2.]); o = Ident.apply(x): o._is_view(), o._base is x, o.is_leaf False;
// grad(o.sum(), x) = [1, 1]; o.mul_(tensor([5., 5.])) raises "Output 0 of Ident is a view and is
// being modified inplace. This view was created inside a custom Function..." (not "a view of a
// leaf").
TEST(CustomFunctionOutputs, ALeafReturnedAsIsIsAViewOfTheLeaf) {
  Tensor x = leaf({1, 2}, {2});
  Tensor o = Ident::apply({x})[0];
  EXPECT_TRUE(o.is_view());
  EXPECT_TRUE(o.base().is_same(x));
  EXPECT_FALSE(o.is_leaf());
  expect_values(grad({ops::sum(o)}, {x})[0], {1, 1});
  Tensor five = values({5, 5}, {2});
  expect_error([&] { ops::mul_(o, five); }, {"output 0 of 'Ident'", kInCustomFunction});
}

// with torch.no_grad(): o = Ident.apply(x * 1) -> o._is_view() False, o.requires_grad False,
// o.grad_fn None, o is not the input. a = tensor([1., 2.]); o = Ident.apply(a); o.mul_(2) ->
// o._is_view() True, a = [2, 4].
TEST(CustomFunctionOutputs, WithoutANodeAnInputIsDetachedOrViewed) {
  Tensor a = ops::mul(leaf({1, 2}, {2}), 1.0);
  Tensor o;
  {
    NoGradGuard no_grad;
    o = Ident::apply({a})[0];
  }
  EXPECT_FALSE(o.is_view());
  EXPECT_FALSE(o.requires_grad());
  EXPECT_EQ(o.grad_fn(), nullptr);
  EXPECT_FALSE(o.is_same(a));
  Tensor c = values({1, 2}, {2});
  Tensor p = Ident::apply({c})[0];
  EXPECT_TRUE(p.is_view());
  ops::mul_(p, values({2}, {}));
  expect_values(c, {2, 4});
}

// o = Head.apply(a) with a = x * 1 (Head returns a[0:2]): o._is_view(), o._base is a; o.mul_(2)
// raises "Output 0 of Head is a view and is being modified inplace. This view was created inside
// a custom Function..."; after a.mul_(2), o.grad_fn raises "... its base or another view of its
// base has been modified inplace".
TEST(CustomFunctionOutputs, AViewMadeInForwardIsOfTheFunction) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor a = ops::mul(x, 1.0);
  Tensor o = Head::apply({a})[0];
  EXPECT_TRUE(o.is_view());
  EXPECT_TRUE(o.base().is_same(a));
  EXPECT_EQ(o.grad_fn()->name(), "Head");
  Tensor two = values({2}, {});
  expect_error([&] { ops::mul_(o, two); },
               {"output 0 of 'Head'", kBeingWritten, kInCustomFunction});
  ops::mul_(a, two);
  expect_error([&] { (void)o.grad_fn(); }, {"output 0 of 'Head'", kBaseWritten, kInCustomFunction});
}

// o, p = Halves.apply(a): o.mul_(2) raises "Output 0 of Halves is a view and is being modified
// inplace. This view is the output of a function that returns multiple views..."; after
// a.mul_(2), o.grad_fn raises the same with "its base or another view of its base has been
// modified inplace".
TEST(CustomFunctionOutputs, ViewsAmongSeveralOutputsAreMultiOutputViews) {
  Tensor a = ops::mul(leaf({1, 2, 3}, {3}), 1.0);
  TensorList out = Halves::apply({a});
  Tensor two = values({2}, {});
  const std::string direct = error_of([&] { ops::mul_(out[0], two); });
  EXPECT_NE(direct.find("output 0 of 'Halves'"), std::string::npos) << direct;
  EXPECT_NE(direct.find(kSeveralViews), std::string::npos) << direct;
  EXPECT_EQ(direct.find(kInCustomFunction), std::string::npos) << direct;
  ops::mul_(a, two);
  expect_error([&] { (void)out[0].grad_fn(); },
               {"output 0 of 'Halves'", kBaseWritten, kSeveralViews});
}

// o = Ident.apply(x * 1): o[0:1].mul_(2) raises "Output 0 of Slice is a view and is being
// modified inplace. This view was created inside a custom Function..."; a view of o made under
// no_grad raises "A view was created in no_grad mode and is being modified inplace with grad mode
// enabled" (without the custom Function's part).
TEST(CustomFunctionOutputs, AViewOfAnOutputIsOfItsKind) {
  Tensor o = Ident::apply({ops::mul(leaf({1, 2}, {2}), 1.0)})[0];
  Tensor two = values({2}, {});
  Tensor head = ops::slice(o, 0, 0, 1);
  expect_error([&] { ops::mul_(head, two); }, {"output 0 of 'slice'", kInCustomFunction});
  Tensor w;
  {
    NoGradGuard no_grad;
    w = ops::slice(o, 0, 0, 1);
  }
  const std::string what = error_of([&] { ops::mul_(w, two); });
  EXPECT_NE(what.find(kNoGradView), std::string::npos) << what;
  EXPECT_EQ(what.find(kInCustomFunction), std::string::npos) << what;
}

// x, y = tensor([1., 2.]), leaf([3., 4.]); o, p = PassFirst.apply(x, y) (x marked
// non-differentiable): o._is_view() True, o.requires_grad False, o.grad_fn None; o.mul_(y) raises
// "A view was created in no_grad mode and is being modified inplace with grad mode enabled. This
// view was created inside a custom Function...".
TEST(CustomFunctionOutputs, ANonDifferentiableInputIsReturnedAsAView) {
  Tensor x = values({1, 2}, {2}), y = leaf({3, 4}, {2});
  TensorList out = PassFirst::apply({x, y});
  EXPECT_TRUE(out[0].is_view());
  EXPECT_FALSE(out[0].requires_grad());
  EXPECT_EQ(out[0].grad_fn(), nullptr);
  expect_error([&] { ops::mul_(out[0], y); }, {"mul_", kNoGradView, kInCustomFunction});
}

// --- ctx.mark_dirty (issue 44, point 7) ------------------------------------------------------

// a = x * 3; o = Double_.apply(a): o is a, a.grad_fn Double_Backward, a._version 2 (the write and
// mark_dirty), a = [6, 12]; grad(a.sum(), x) = [6, 6].
TEST(MarkDirty, ADirtyInputTakesTheFunctionsNode) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = ops::mul(x, 3.0);
  Tensor o = Double_::apply({a})[0];
  EXPECT_TRUE(o.is_same(a));
  EXPECT_EQ(a.grad_fn()->name(), "Double_");
  EXPECT_EQ(a.version(), 2u);
  expect_values(a, {6, 12});
  expect_values(grad({ops::sum(a)}, {x})[0], {6, 6});
}

// Double_.apply(leaf) raises "a leaf Variable that requires grad has been used in an in-place
// operation." x = tensor([1., 2.]); o = Double_.apply(x): o is x, x = [2, 4], no history, version
// 2. x, y = tensor([1., 2.]), leaf([3., 4.]); o = MulBy_.apply(x, y): o is x, x = [3, 8],
// requires grad, grad_fn MulBy_Backward, not a leaf, version 2; grad(o.sum(), y) = [1, 2].
TEST(MarkDirty, LeavesThatRequireGradAreRefusedOthersMoveIntoTheGraph) {
  Tensor l = leaf({1, 2}, {2});
  expect_error([&] { Double_::apply({l}); },
               {"Function 'Double_'", "a leaf tensor that requires grad", "marked dirty"});
  expect_values(l, {2, 4});  // forward ran, as in PyTorch, before the check
  EXPECT_TRUE(l.is_leaf());

  Tensor c = values({1, 2}, {2});
  Tensor o = Double_::apply({c})[0];
  EXPECT_TRUE(o.is_same(c));
  expect_values(c, {2, 4});
  EXPECT_FALSE(c.requires_grad());
  EXPECT_EQ(c.grad_fn(), nullptr);
  EXPECT_EQ(c.version(), 2u);

  Tensor x = values({1, 2}, {2}), y = leaf({3, 4}, {2});
  Tensor p = MulBy_::apply({x, y})[0];
  EXPECT_TRUE(p.is_same(x));
  expect_values(x, {3, 8});
  EXPECT_TRUE(x.requires_grad());
  EXPECT_EQ(x.grad_fn()->name(), "MulBy_");
  EXPECT_FALSE(x.is_leaf());
  EXPECT_EQ(x.version(), 2u);
  expect_values(grad({ops::sum(p)}, {y})[0], {1, 2});
}

// Double_.apply(leaf([1., 2., 3., 4.])[1:3]) raises "a view of a leaf Variable that requires grad
// is being used in an in-place operation."
// a = x * 1; v = a[1:3]; w = a[2:]; o = Double_.apply(v): o is v, a = [1, 4, 6, 4],
// v.grad_fn AsStridedBackward0, a.grad_fn CopySlices; grad((a * [1, 2, 3, 4]).sum(), x) =
// [1, 4, 6, 4]; grad((v * [5, 7]).sum(), x) = [0, 10, 14, 0]; grad((w * [5, 7]).sum(), x) =
// [0, 0, 10, 7].
TEST(MarkDirty, ADirtyViewRebasesItsBase) {
  Tensor l = leaf({1, 2, 3, 4}, {4});
  expect_error([&] { Double_::apply({ops::slice(l, 0, 1, 3)}); },
               {"Double_", "view of a leaf tensor that requires grad"});

  Tensor x = leaf({1, 2, 3, 4}, {4});
  Tensor a = ops::mul(x, 1.0);
  Tensor v = ops::slice(a, 0, 1, 3);
  Tensor w = ops::slice(a, 0, 2, 4);
  Tensor o = Double_::apply({v})[0];
  EXPECT_TRUE(o.is_same(v));
  expect_values(a, {1, 4, 6, 4});
  EXPECT_EQ(v.grad_fn()->name(), "regenerated_view");  // PyTorch's AsStridedBackward0
  EXPECT_EQ(a.grad_fn()->name(), "copy_slices");       // PyTorch's CopySlices
  const GradArgs keep = GradArgs().retain_graph();
  expect_values(grad({ops::sum(ops::mul(a, values({1, 2, 3, 4}, {4})))}, {x}, keep)[0],
                {1, 4, 6, 4});
  expect_values(grad({ops::sum(ops::mul(v, values({5, 7}, {2})))}, {x}, keep)[0], {0, 10, 14, 0});
  expect_values(grad({ops::sum(ops::mul(w, values({5, 7}, {2})))}, {x})[0], {0, 0, 10, 7});
}

// a = x * 1; v = a.view(2, 2)[1]; Double_.apply(v): a = [1, 2, 6, 8];
// grad((a * a).sum(), x) = [2, 4, 24, 32].
TEST(MarkDirty, ADirtyViewOfAViewRebasesTheRootBase) {
  Tensor x = leaf({1, 2, 3, 4}, {4});
  Tensor a = ops::mul(x, 1.0);
  Tensor v = ops::select(ops::view(a, {2, 2}), 0, 1);
  Double_::apply({v});
  expect_values(a, {1, 2, 6, 8});
  expect_values(grad({ops::sum(ops::mul(a, a))}, {x})[0], {2, 4, 24, 32});
}

// DoubleAndTriple_.apply((x * 1)[1:3]) raises "If your Function modifies inplace an input that is
// a view of another Tensor, your Function cannot return more than one Tensor."; with a = x * 1
// (not a view): o is a, grad(o.sum() + p.sum(), x) = [8, 8, 8, 8].
TEST(MarkDirty, ADirtyViewMustBeTheOnlyOutput) {
  Tensor x = leaf({1, 2, 3, 4}, {4});
  Tensor a = ops::mul(x, 1.0);
  Tensor v = ops::slice(a, 0, 1, 3);
  expect_error([&] { DoubleAndTriple_::apply({v}); },
               {"Function 'DoubleAndTriple_'", "is a view of another tensor",
                "cannot return more than one tensor"});
  EXPECT_EQ(a.grad_fn()->name(), "mul_scalar");  // refused before any history changed
  Tensor b = ops::mul(x, 1.0);
  TensorList out = DoubleAndTriple_::apply({b});
  EXPECT_TRUE(out[0].is_same(b));
  expect_values(grad({ops::add(ops::sum(out[0]), ops::sum(out[1]))}, {x})[0], {8, 8, 8, 8});
}

// DoubleNotReturned_.apply(leaf([1., 2.]) * 3) raises "Some elements marked as dirty during the
// forward method were not returned as output." MarkOnly_.apply(a): o is a, a._version 1,
// grad(o.sum(), x) = [3, 3].
TEST(MarkDirty, DirtyInputsMustBeReturnedAndAreBumpedOnce) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = ops::mul(x, 3.0);
  expect_error([&] { DoubleNotReturned_::apply({a}); },
               {"Function 'DoubleNotReturned_'", "marked dirty", "was not returned as an output"});
  EXPECT_EQ(a.grad_fn()->name(), "mul_scalar");
  Tensor b = ops::mul(x, 3.0);
  Tensor o = MarkOnly_::apply({b})[0];
  EXPECT_TRUE(o.is_same(b));
  EXPECT_EQ(b.version(), 1u);
  expect_values(grad({ops::sum(o)}, {x})[0], {3, 3});
}

// a = x * 3; s = a * a; Double_.apply(a); grad(s.sum(), x) raises "one of the variables needed
// for gradient computation has been modified by an inplace operation: ... is at version 2;
// expected version 0 instead."
TEST(MarkDirty, ADirtyInputSavedBeforeFailsTheVersionCheck) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = ops::mul(x, 3.0);
  Tensor s = ops::mul(a, a);
  Double_::apply({a});
  expect_error([&] { grad({ops::sum(s)}, {x}); },
               {"modified by an in-place operation", "version 2; expected version 0"});
}

// with torch.no_grad(): o = Double_.apply(x) (a leaf that requires grad) -> o is not x,
// o._is_view() False, x = [2, 4], x.grad_fn None, x.requires_grad True, x._version 2.
TEST(MarkDirty, UnderNoGradADirtyLeafIsReturnedDetached) {
  Tensor x = leaf({1, 2}, {2});
  Tensor o;
  {
    NoGradGuard no_grad;
    o = Double_::apply({x})[0];
  }
  EXPECT_FALSE(o.is_same(x));
  EXPECT_FALSE(o.is_view());
  expect_values(x, {2, 4});
  EXPECT_TRUE(x.is_leaf());
  EXPECT_TRUE(x.requires_grad());
  EXPECT_EQ(x.version(), 2u);
}

// The refusals of dirty views, in PyTorch's order: a view made under no_grad of a tensor that
// requires grad is a leaf that requires grad ("a leaf Variable that requires grad has been used in
// an in-place operation."); a split output: "Output 0 of Split is a view and is being modified
// inplace. This view is the output of a function that returns multiple views."; a custom
// Function's output: "Output 0 of Ident is a view and is being modified inplace. This view was
// created inside a custom Function..."; a no_grad view of a constant, with another input that
// requires grad: "A view was created in no_grad mode and is being modified inplace with grad mode
// enabled."
TEST(MarkDirty, DirtyViewsAreCheckedAsInPlaceWritesThroughViews) {
  Tensor x = leaf({1, 2, 3, 4}, {4});
  Tensor a = ops::mul(x, 1.0);
  Tensor no_grad_view;
  {
    NoGradGuard no_grad;
    no_grad_view = ops::slice(a, 0, 1, 3);
  }
  expect_error([&] { Double_::apply({no_grad_view}); },
               {"Function 'Double_'", "a leaf tensor that requires grad"});
  Tensor half = ops::split(ops::mul(x, 1.0), 2)[0];
  expect_error([&] { Double_::apply({half}); }, {"Double_", kBeingWritten, kSeveralViews});
  Tensor o = Ident::apply({ops::mul(leaf({1, 2}, {2}), 1.0)})[0];
  expect_error([&] { Double_::apply({o}); }, {"Double_", kBeingWritten, kInCustomFunction});
  Tensor b = values({1, 2, 3}, {3}), y = leaf({3, 4}, {2});
  Tensor v;
  {
    NoGradGuard no_grad;
    v = ops::slice(b, 0, 0, 2);
  }
  expect_error([&] { MulBy_::apply({v, y}); }, {"MulBy_", kNoGradView});
}

// a = x * 1; o = SaveDirty_.apply(a) (saves its dirty output): grad(o.sum(), x) = [2, 4].
TEST(MarkDirty, ASavedDirtyInputIsSavedAsAnOutput) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = ops::mul(x, 1.0);
  Tensor o = SaveDirty_::apply({a})[0];
  expect_values(grad({ops::sum(o)}, {x})[0], {2, 4});
}

}  // namespace
}  // namespace ag
