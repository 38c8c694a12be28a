// A graph never owns itself (Note [Saved values hold no cycles], engine/saved_variable.h): once
// the caller drops every tensor, every byte comes back, even after an in-place op wrote into a
// tensor that a node had saved, with that node's result as the other operand. Holding the saved
// tensor object itself made node -> tensor -> in-place node -> node a reference cycle (PyTorch
// 2.15 keeps that cycle: `a = x.clone(); y = a * w; a.add_(y)` never frees `a`). The counts are
// the allocator's live bytes, so the test fails without AddressSanitizer too; under
// `--config=asan` LeakSanitizer reports the cycle as indirect leaks.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/function.h"
#include "engine/memory/allocator.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_values;
using testing::leaf;

// Runs `program` and checks that it leaves nothing behind once its tensors are gone.
void expect_frees_everything(const std::function<void()>& program) {
  const int64_t before = live_bytes();
  program();
  EXPECT_EQ(live_bytes(), before);
}

TEST(SavedValueCycles, InplaceWriteIntoAnInputTheResultsNodeSavedFreesEverything) {
  expect_frees_everything([] {
    Tensor x = leaf({1, 2, 3}, {3});
    Tensor w = leaf({4, 5, 6}, {3});
    Tensor a = ops::clone(x);
    Tensor y = ops::mul(a, w);  // saves a (for w's gradient)
    ops::add_(a, y);            // a's new history reaches mul's node
  });
}

TEST(SavedValueCycles, InplaceWriteThroughAViewOfASavedInputFreesEverything) {
  expect_frees_everything([] {
    Tensor x = leaf({1, 2, 3, 4}, {4});
    Tensor a = ops::clone(x);
    Tensor y = ops::tanh(ops::mul(a, a));
    Tensor v = ops::view(a, {2, 2});
    ops::mul_(v, ops::view(y, {2, 2}));
  });
}

// A node saved a leaf that does not require grad; an in-place op then moves the leaf into the
// graph's interior with the node's result as the source (found by the API state machine:
// `t10 = div(t2, t0); t0.copy_(t10)`). Holding the leaf object made node -> leaf -> CopyBackward
// -> node a cycle (PyTorch 2.15 keeps it too).
TEST(SavedValueCycles, ALeafMovedIntoTheInteriorWithTheResultOfANodeThatSavedItFreesEverything) {
  expect_frees_everything([] {
    Tensor a = leaf({1, 2, 4}, {3}, /*requires_grad=*/false);
    Tensor x = leaf({4, 5, 6}, {3});
    Tensor y = ops::div(x, a);  // saves a (for x's gradient)
    ops::copy_(a, y);           // a's new history reaches div's node
  });
}

TEST(SavedValueCycles, ALeafMovedIntoTheInteriorThroughItsViewFreesEverything) {
  expect_frees_everything([] {
    Tensor a = leaf({1, 2, 4, 8}, {4}, /*requires_grad=*/false);
    Tensor v = ops::view(a, {2, 2});  // a leaf too, viewing a
    Tensor x = leaf({4, 5, 6, 7}, {2, 2});
    Tensor y = ops::div(x, v);  // saves v
    ops::copy_(a, ops::view(y, {4}));
  });
}

// A custom Function saves its inputs with the same rule.
struct SavesItsInput : Function<SavesItsInput> {
  static constexpr const char* name = "SavesItsInput";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    ctx.save_for_backward({in[0]});
    return {ops::mul(in[0], 3.0)};
  }
  static TensorList backward(BackwardCtx& ctx, const TensorList& grads) {
    return {ops::mul(grads[0], ops::add(ctx.saved_tensors()[0], 3.0))};
  }
};

TEST(SavedValueCycles, InplaceWriteIntoACustomFunctionsSavedInputFreesEverything) {
  expect_frees_everything([] {
    Tensor x = leaf({1, 2}, {2});
    Tensor a = ops::clone(x);
    Tensor y = SavesItsInput::apply({a})[0];
    ops::add_(a, y);
  });
}

TEST(SavedValueCycles, ALeafACustomFunctionSavedMovedIntoTheInteriorFreesEverything) {
  expect_frees_everything([] {
    Tensor x = leaf({1, 2}, {2});
    Tensor y = SavesItsInput::apply({x})[0];
    x.set_requires_grad(false);
    ops::copy_(x, y);
  });
}

// What the saved alias gives back is what the tensor would have: the version error after the
// write (PyTorch: "modified by an inplace operation"), and the input's history for double
// backward before it.
TEST(SavedValueCycles, ASavedInputWrittenInPlaceStillRaisesTheVersionError) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor w = leaf({4, 5, 6}, {3});
  Tensor a = ops::clone(x);
  Tensor y = ops::mul(a, w);
  ops::add_(a, y);
  try {
    grad({ops::sum(y)}, {w});
    FAIL() << "expected the in-place version error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an in-place operation"), std::string::npos)
        << e.what();
  }
}

TEST(SavedValueCycles, ASavedNonLeafInputKeepsItsHistoryForDoubleBackward) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor a = ops::mul(x, 2.0);                              // a = 2x, a non-leaf
  Tensor y = ops::sum(ops::mul(ops::mul(a, a), a));         // y = 8 x^3
  Tensor g = grad({y}, {x}, GradArgs().create_graph())[0];  // 24 x^2
  expect_values(g, {24, 96, 216});
  expect_values(grad({ops::sum(g)}, {x})[0], {48, 96, 144});  // 48 x
}

TEST(SavedValueCycles, ACustomFunctionsSavedNonLeafInputKeepsItsHistory) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = ops::mul(x, 2.0);
  Tensor y = ops::sum(SavesItsInput::apply({a})[0]);
  // d/da = a + 3, d/dx = 2 (a + 3) = 4x + 6; d/dx of that summed = 4.
  Tensor g = grad({y}, {x}, GradArgs().create_graph())[0];
  expect_values(g, {10, 14});
  expect_values(grad({ops::sum(g)}, {x})[0], {4, 4});
}

// A saved leaf is an alias plus the leaf's AccumulateGrad; what unpack() gives is what the leaf
// object would be, as PyTorch 2.15 on the same programs.
TEST(SavedLeaves, ALeafMovedIntoTheInteriorStillRaisesTheVersionError) {
  Tensor a = leaf({1, 2, 4}, {3}, /*requires_grad=*/false);
  Tensor x = leaf({4, 5, 6}, {3});
  Tensor y = ops::div(x, a);
  ops::copy_(a, y);
  EXPECT_NE(testing::error_of([&] {
              grad({ops::sum(y)}, {x});
            }).find("modified by an in-place operation"),
            std::string::npos);
}

TEST(SavedLeaves, ALeafThatRequiresGradOnlyAfterItWasSavedHasHistoryWhenUnpacked) {
  Tensor a = leaf({1, 2, 3}, {3}, /*requires_grad=*/false);
  Tensor x = leaf({4, 5, 6}, {3});
  Tensor y = ops::mul(a, x);  // saves a (for x's gradient)
  a.set_requires_grad(true);
  Tensor gx = grad({ops::sum(y)}, {x}, GradArgs().create_graph())[0];  // 1 * a
  expect_values(gx, {1, 2, 3});
  EXPECT_TRUE(gx.requires_grad());
  expect_values(grad({ops::sum(gx)}, {a})[0], {1, 1, 1});
}

TEST(SavedLeaves, ALeafThatStoppedRequiringGradHasNoHistoryWhenUnpacked) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor w = leaf({4, 5, 6}, {3});
  Tensor y = ops::mul(x, w);  // saves x (for w's gradient)
  x.set_requires_grad(false);
  Tensor gw = grad({ops::sum(y)}, {w}, GradArgs().create_graph())[0];
  expect_values(gw, {1, 2, 3});
  EXPECT_FALSE(gw.requires_grad());
}

TEST(SavedLeaves, ALeafTheCallerDroppedStillRequiresGradWhenUnpacked) {
  Tensor w = leaf({4, 5, 6}, {3});
  Tensor y = ops::mul(leaf({1, 2, 3}, {3}), w);  // the leaf lives on only as a saved value
  Tensor gw = grad({ops::sum(y)}, {w}, GradArgs().create_graph())[0];
  expect_values(gw, {1, 2, 3});
  EXPECT_TRUE(gw.requires_grad());
}

TEST(SavedLeaves, ALeafDroppedAfterItStoppedRequiringGradHasNoHistoryWhenUnpacked) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor w = leaf({4, 5, 6}, {3});
  Tensor y = ops::mul(x, w);  // saves x (for w's gradient)
  x.set_requires_grad(false);
  x = Tensor();  // the saved value keeps the flag the leaf had when it died
  Tensor gw = grad({ops::sum(y)}, {w}, GradArgs().create_graph())[0];
  expect_values(gw, {1, 2, 3});
  EXPECT_FALSE(gw.requires_grad());
}

// The leaf may die on one thread while a backward on another unpacks it (Note [The leaf's flag,
// copied], engine/accumulate_grad.h): either way the value still requires grad, and every byte
// comes back. The TSan run checks the same test for races.
TEST(SavedLeaves, ALeafDroppedOnAnotherThreadWhileItsSavedValueIsUnpacked) {
  const int64_t base = live_bytes();
  for (int round = 0; round < 200; ++round) {
    Tensor x = leaf({1, 2, 3}, {3});
    Tensor w = leaf({4, 5, 6}, {3});
    Tensor y = ops::sum(ops::mul(x, w));  // saves x (for w's gradient)
    std::thread dropper([&x] { x = Tensor(); });
    Tensor gw = grad({y}, {w}, GradArgs().create_graph())[0];
    dropper.join();
    expect_values(gw, {1, 2, 3});
    EXPECT_TRUE(gw.requires_grad());
  }
  EXPECT_EQ(live_bytes(), base);
}

TEST(SavedLeaves, ACustomFunctionsSavedLeafLeadsDoubleBackwardIntoTheLeafsGrad) {
  Tensor x = leaf({1, 2}, {2});
  Tensor g = grad({ops::sum(SavesItsInput::apply({x})[0])}, {x}, GradArgs().create_graph())[0];
  expect_values(g, {4, 5});  // x + 3
  EXPECT_TRUE(g.requires_grad());
  backward(ops::sum(g));
  expect_values(x.grad(), {1, 1});
}

}  // namespace
}  // namespace ag
