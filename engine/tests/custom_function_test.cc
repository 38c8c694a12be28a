// Custom Functions' outputs (Note [Custom Function outputs], engine/function.h): the cases of
// PyTorch's _wrap_outputs that regressions/pytorch_custom_function_test does not walk through.
// PyTorch 2.15 gives the same for each (the comments give the program).
#include <gtest/gtest.h>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/function.h"
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

// (a, a): the input returned twice.
struct Twice : Function<Twice> {
  static constexpr const char* name = "Twice";
  static TensorList forward(ForwardCtx&, const TensorList& in) { return {in[0], in[0]}; }
  static TensorList backward(BackwardCtx&, const TensorList& g) {
    return {ops::add(g[0], ops::mul(g[1], 2.0))};
  }
};

// a.mul_(2), with `a` listed twice in mark_dirty.
struct DirtyListedTwice : Function<DirtyListedTwice> {
  static constexpr const char* name = "DirtyListedTwice";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    Tensor a = in[0];
    ops::mul_(a, values({2}, {}));
    ctx.mark_dirty({a, a});
    return {a};
  }
  static TensorList backward(BackwardCtx&, const TensorList& g) { return {ops::mul(g[0], 2.0)}; }
};

// a.mul_(2), marked dirty and returned twice.
struct DirtyReturnedTwice : Function<DirtyReturnedTwice> {
  static constexpr const char* name = "DirtyReturnedTwice";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    Tensor a = in[0];
    ops::mul_(a, values({2}, {}));
    ctx.mark_dirty({a});
    return {a, a};
  }
  static TensorList backward(BackwardCtx&, const TensorList& g) {
    return {ops::add(ops::mul(g[0], 2.0), ops::mul(g[1], 2.0))};
  }
};

// a.mul_(2) without mark_dirty, returning a[0:1].
struct WritesWithoutMarking : Function<WritesWithoutMarking> {
  static constexpr const char* name = "WritesWithoutMarking";
  static TensorList forward(ForwardCtx&, const TensorList& in) {
    Tensor a = in[0];
    ops::mul_(a, values({2}, {}));
    return {ops::slice(a, 0, 0, 1)};
  }
  static TensorList backward(BackwardCtx&, const TensorList& g) {
    return {ops::cat({g[0], ops::zeros({1}, DType::kFloat64)})};
  }
};

// a = x * 1; o, p = Twice.apply(a): o is not p, both views of a, one grad_fn;
// grad((o * 3 + p).sum(), x) = [5, 5]; o.mul_(2) raises "Output 0 of Twice is a view and is being
// modified inplace. This view is the output of a function that returns multiple views."
TEST(CustomFunction, AnInputReturnedTwiceIsTwoViews) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = ops::mul(x, 1.0);
  TensorList out = Twice::apply({a});
  EXPECT_FALSE(out[0].is_same(out[1]));
  EXPECT_TRUE(out[0].base().is_same(a));
  EXPECT_TRUE(out[1].base().is_same(a));
  EXPECT_EQ(out[0].grad_fn(), out[1].grad_fn());
  EXPECT_EQ(out[0].output_nr(), 0u);
  EXPECT_EQ(out[1].output_nr(), 1u);
  expect_values(grad({ops::sum(ops::add(ops::mul(out[0], 3.0), out[1]))}, {x})[0], {5, 5});
  expect_error([&] { ops::mul_(out[0], values({2}, {})); },
               {"output 0 of 'Twice'", "one of several views that one function returned"});
}

// a = x * 1; DirtyListedTwice.apply(a) (ctx.mark_dirty(a, a)): a._version 3, the write and one
// bump per listing.
TEST(CustomFunction, ADirtyInputIsBumpedOncePerListing) {
  Tensor a = ops::mul(leaf({1, 2}, {2}), 1.0);
  DirtyListedTwice::apply({a});
  EXPECT_EQ(a.version(), 3u);
  expect_values(a, {2, 4});
}

// a = x * 1; o, p = DirtyReturnedTwice.apply(a): o is a, p is a (its history is output 1, the
// last); grad(a.sum(), x) = [2, 2].
TEST(CustomFunction, ADirtyInputReturnedTwiceIsTheLastOutput) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = ops::mul(x, 1.0);
  TensorList out = DirtyReturnedTwice::apply({a});
  EXPECT_TRUE(out[0].is_same(a));
  EXPECT_TRUE(out[1].is_same(a));
  EXPECT_EQ(a.output_nr(), 1u);
  expect_values(grad({ops::sum(a)}, {x})[0], {2, 2});
}

// a = x * 1; o = WritesWithoutMarking.apply(a): o.grad_fn WritesWithoutMarkingBackward (a view's
// history reflects its storage as the Function left it), a._version 1; grad(o.sum(), x) = [1, 0].
TEST(CustomFunction, AViewOutputIsCurrentWithTheWritesOfForward) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = ops::mul(x, 1.0);
  Tensor o = WritesWithoutMarking::apply({a})[0];
  EXPECT_EQ(o.grad_fn()->name(), "WritesWithoutMarking");
  EXPECT_EQ(a.version(), 1u);
  expect_values(grad({ops::sum(o)}, {x})[0], {1, 0});
}

}  // namespace
}  // namespace ag
