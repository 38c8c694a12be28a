// Seed 003 (PyTorch #16583, "Don't keep unnecessary saved_inputs alive"): an op saves an input
// only if a formula that uses it belongs to an input that requires grad (Note [Guarded saves]).
// Each scenario is checked with the guards on (the fix) and off (the "before"), so the test
// fails if the guards stop working, and also if the "before" stops showing the problem.
#include <gtest/gtest.h>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/memory/allocator.h"
#include "engine/options.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

EngineOptions guards(bool on) {
  EngineOptions o;
  o.guard_saves = on;
  return o;
}

// x [2, 3, 10, 10] requires grad, m [1, 3, 1, 1] does not (test_free_unneeded_tensor).
struct FreeUnneeded {
  Tensor x = ops::uniform({2, 3, 10, 10}, -1, 1, /*seed=*/1).set_requires_grad(true);
  Tensor m = ops::uniform({1, 3, 1, 1}, -1, 1, /*seed=*/2);
  static constexpr int64_t kXPlus2Bytes = 2 * 3 * 10 * 10 * 4;  // float32
};

TEST(Dropout2dMemory, MaskMultiplyKeepsNothingExtra) {
  FreeUnneeded s;
  Tensor z = ops::sum(s.x);
  const int64_t base = live_bytes();
  // Neither x + 2 nor (x + 2) * m is needed by any gradient that can be asked for: mul keeps
  // only m (already alive), and the new z replaces the old one, which had the same size.
  z = ops::sum(ops::mul(ops::add(s.x, 2.0), s.m));
  EXPECT_EQ(live_bytes(), base);
  backward(z);
  EXPECT_EQ(s.x.grad().shape(), s.x.shape());
}

TEST(Dropout2dMemory, WithoutGuardsTheInputIsKeptAlive) {
  OptionsGuard before(guards(false));
  FreeUnneeded s;
  Tensor z = ops::sum(s.x);
  const int64_t base = live_bytes();
  z = ops::sum(ops::mul(ops::add(s.x, 2.0), s.m));
  EXPECT_EQ(live_bytes(), base + FreeUnneeded::kXPlus2Bytes);  // x + 2, saved by mul for m's grad
}

TEST(Dropout2dMemory, Dropout2dKeepsOnlyItsMask) {
  FreeUnneeded s;
  const int64_t mask_bytes = 2 * 3 * 4;  // one float32 per (sample, channel)
  for (bool on : {true, false}) {
    OptionsGuard options(guards(on));
    Tensor z = ops::sum(s.x);
    const int64_t base = live_bytes();
    z = ops::sum(ops::dropout2d(ops::add(s.x, 2.0), 0.5, /*train=*/true, /*seed=*/7));
    const int64_t expected = base + mask_bytes + (on ? 0 : FreeUnneeded::kXPlus2Bytes);
    EXPECT_EQ(live_bytes(), expected) << "guard_saves=" << on;
  }
}

// test_no_unnecessary_save: x is detached and overwritten in place each iteration; x * c_i must
// not save x (c_i does not require grad), or backward would see a modified saved tensor.
Tensor unrolled_loss(const Tensor& mu) {
  Tensor x = ops::zeros({1}, DType::kFloat64);
  Tensor loss = ops::zeros({}, DType::kFloat64);
  for (int i = 0; i < 3; ++i) {
    x = ops::detach(x);  // x.detach_(): same storage, so the same version counter
    ops::copy_(x, ops::add(mu, static_cast<double>(i)));
    Tensor c = ops::from_vector({static_cast<double>(i)}, {1}, DType::kFloat64);
    loss = ops::add(loss, ops::sum(ops::mul(x, c)));
  }
  return loss;
}

TEST(Dropout2dMemory, NoUnnecessarySave) {
  Tensor mu = testing::leaf({1.0}, {1});
  reset_counters();
  Tensor loss = unrolled_loss(mu);
  EXPECT_EQ(counters().save_count("mul:self"), 0);   // x is never saved
  EXPECT_EQ(counters().save_count("mul:other"), 3);  // c_i is, for x's gradient
  EXPECT_EQ(loss.item(), 0 * 1 + 1 * 2 + 2 * 3);
  backward(loss);
  testing::expect_values(mu.grad(), {0 + 1 + 2});
}

// Without guards each x is saved although nothing can read it. Saved values are unpacked lazily,
// only by the formulas that run, so backward still succeeds here (PyTorch in 2019 unpacked every
// saved value up front and raised the version error); the waste shows in the counters.
TEST(Dropout2dMemory, WithoutGuardsEveryOverwrittenInputIsSaved) {
  OptionsGuard before(guards(false));
  Tensor mu = testing::leaf({1.0}, {1});
  reset_counters();
  Tensor loss = unrolled_loss(mu);
  EXPECT_EQ(counters().save_count("mul:self"), 3);
  EXPECT_EQ(counters().save_count("mul:other"), 3);
  backward(loss);
  testing::expect_values(mu.grad(), {0 + 1 + 2});
}

}  // namespace
}  // namespace ag
