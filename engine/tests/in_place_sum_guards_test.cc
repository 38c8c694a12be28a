// The engine's in-place sums just outside their conditions (Note [Summing gradients in place] and
// Note [Sums fused into formulas], engine/engine.cc): held_only_here, can_sum_into and can_add_into
// on each state on either side of each of their conditions, and the engine's sums on gradients
// that someone else holds, whose values must not change under them.
#include <gtest/gtest.h>

#include <vector>

#include "engine/accumulate_grad.h"
#include "engine/autograd.h"
#include "engine/grad_mode.h"
#include "engine/options.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::leaf;

Tensor fresh(const Shape& shape = {2, 3}, DType dtype = DType::kFloat64) {
  return ops::full(shape, 1.5, dtype);
}

TEST(InPlaceSumGuards, HeldOnlyHereOnlyForAnUnsharedTensorWithoutHistory) {
  EXPECT_TRUE(held_only_here(fresh()));
  {
    const Tensor t = fresh();
    const Tensor copy = t;  // a second handle on the same tensor
    EXPECT_FALSE(held_only_here(t));
  }
  {
    const Tensor t = fresh();
    const Tensor view = ops::reshape(t, {6});  // another tensor on the same storage
    EXPECT_FALSE(held_only_here(t));
    EXPECT_FALSE(held_only_here(view));
  }
  {
    Tensor t = fresh();
    t.set_requires_grad(true);
    EXPECT_FALSE(held_only_here(t));
  }
}

TEST(InPlaceSumGuards, CanSumIntoOnlyAnUnsharedTargetOfTheOthersLayout) {
  const Tensor other = fresh();
  EXPECT_TRUE(can_sum_into(fresh(), other));
  EXPECT_FALSE(can_sum_into(fresh({3}), fresh({2, 3})));  // broadcasts, but another shape
  EXPECT_FALSE(can_sum_into(fresh({1, 3}), fresh({3})));  // as many elements, another shape
  EXPECT_FALSE(can_sum_into(fresh({2, 3}, DType::kFloat32), other));
  const Tensor held = fresh();
  const Tensor handle = held;
  EXPECT_FALSE(can_sum_into(held, other));
  // The relation is not symmetric: the unshared one of two may take the other.
  EXPECT_TRUE(can_sum_into(fresh(), held));
}

TEST(InPlaceSumGuards, CanAddIntoOnlyWithTheSwitchOnGradModeOffAndAnUnsharedSum) {
  const EngineOptions on = EngineOptions(), off = EngineOptions().with_fuse_gradient_sums(false);
  NoGradGuard no_grad;
  EXPECT_TRUE(can_add_into(fresh(), on));
  EXPECT_FALSE(can_add_into(fresh(), off));
  EXPECT_FALSE(can_add_into(Tensor(), on));
  const Tensor held = fresh();
  const Tensor handle = held;
  EXPECT_FALSE(can_add_into(held, on));
  GradModeGuard grad_on(true);
  EXPECT_FALSE(can_add_into(fresh(), on));
}

// y = x * x + x * x (both products of one node's input) with a seed the caller holds: add's
// backward passes the caller's tensor on to both of its inputs, so the gradients that meet there
// are one tensor the caller holds. Summing in place would change the caller's seed.
TEST(InPlaceSumGuards, AGradientTheCallerHoldsIsNotSummedIntoInPlace) {
  for (bool fuse : {true, false}) {
    OptionsGuard options(EngineOptions().with_fuse_gradient_sums(fuse));
    Tensor x = leaf({0.5, -1.0, 2.0}, {3});
    const Tensor y = ops::add(x, x);
    const Tensor seed = ops::from_vector({1.0, 2.0, 3.0}, {3}, DType::kFloat64);
    const TensorList g = grad({y}, {x}, GradArgs().grad_outputs({seed}));
    EXPECT_EQ(seed.to_vector(), std::vector<double>({1, 2, 3})) << "fuse " << fuse;
    EXPECT_EQ(g[0].to_vector(), std::vector<double>({2, 4, 6})) << "fuse " << fuse;
  }
}

// A gradient that meets one waiting in a buffer, where the waiting one is also x's .grad source:
// tanh(x) + tanh(x) * 1 sums two formulas' results at tanh's node; the seed and the .grad the
// caller keeps from a first backward stay as they were.
TEST(InPlaceSumGuards, AHeldGradIsNotWrittenByALaterBackwardsSums) {
  for (bool fuse : {true, false}) {
    OptionsGuard options(EngineOptions().with_fuse_gradient_sums(fuse));
    Tensor x = leaf({0.5, -1.0, 2.0}, {3});
    const Tensor t = ops::tanh(x);
    const Tensor y = ops::add(ops::mul(t, t), t);
    const Tensor seed = ops::ones({3}, DType::kFloat64);
    backward({y}, BackwardArgs().grad_tensors({seed}).retain_graph());
    const Tensor first = x.grad();
    const std::vector<double> first_values = first.to_vector();
    backward({y}, BackwardArgs().grad_tensors({seed}));
    EXPECT_EQ(seed.to_vector(), std::vector<double>({1, 1, 1})) << "fuse " << fuse;
    // .grad accumulates in place (PyTorch's rule), so `first` is x.grad and holds twice the
    // first gradient: what matters is that it is exactly that.
    const std::vector<double> second = x.grad().to_vector();
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(second[i], 2 * first_values[i]) << i;
  }
}

}  // namespace
}  // namespace ag
