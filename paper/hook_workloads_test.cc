// Issue 45's workloads (paper/workloads/hook_workloads.h) at small sizes: the checkpointed MLP's
// gradients equal the plain run's bitwise and its peak is below the plain run's, identity hooks
// change no gradient, and the pack calls that the guards save, counted.
#include "paper/workloads/hook_workloads.h"

#include <gtest/gtest.h>

#include "ops/ops.h"
#include "paper/workloads/tiny_graph.h"

namespace ag::paper {
namespace {

constexpr ResidualMlpConfig kSmall{3, 8, 8, 0.25};

TEST(HookWorkloads, CheckpointedMlpGradientsEqualThePlainRunBitwise) {
  const ResidualMlp mlp = make_residual_mlp(kSmall);
  const TensorList plain = residual_mlp_grads(mlp, false);
  const TensorList checkpointed = residual_mlp_grads(mlp, true);
  ASSERT_EQ(plain.size(), 6u);
  ASSERT_EQ(checkpointed.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(plain[i].to_vector(), checkpointed[i].to_vector()) << "gradient " << i;
  }
  EXPECT_EQ(residual_mlp_step(mlp, false), residual_mlp_step(mlp, true));
}

TEST(HookWorkloads, CheckpointedMlpPeaksBelowThePlainRun) {
  const ResidualMlp mlp = make_residual_mlp({10, 64, 16, 0.25});
  const int64_t plain = residual_mlp_peak_bytes(mlp, false);
  const int64_t checkpointed = residual_mlp_peak_bytes(mlp, true);
  EXPECT_GT(checkpointed, 0);
  EXPECT_LT(checkpointed, plain);
}

TEST(HookWorkloads, IdentityHooksChangeNoGradient) {
  const ScalarChainInputs in = make_scalar_chain_inputs(50);
  EXPECT_EQ(scalar_chain_grad(in, true).to_vector(), scalar_chain_grad(in, false).to_vector());
}

EngineOptions with_guards(bool on) {
  EngineOptions options = default_options();
  options.guard_saves = on;
  return options;
}

TEST(HookWorkloads, GuardsSaveThePackOfAnOperandWhosePartnerNeedsNoGradient) {
  const auto forward = [] {
    Tensor x = ops::uniform({2, 3, 10, 10}, -1, 1, 21);
    x.set_requires_grad(true);
    ops::sum((x + 2.0) * ops::uniform({1, 3, 1, 1}, 0, 2, 22));
  };
  const PackCount on = count_packs(with_guards(true), forward);
  const PackCount off = count_packs(with_guards(false), forward);
  EXPECT_EQ(on.calls, 1);  // m, for x + 2's gradient
  EXPECT_EQ(on.bytes, 3 * 4);
  EXPECT_EQ(off.calls, 2);  // and x + 2, for m's, which m does not require
  EXPECT_EQ(off.bytes, 3 * 4 + 600 * 4);
}

TEST(HookWorkloads, GuardsSaveDropoutsInputAndTheFirstWeightOfAnMlpOnAnInputWithoutGrad) {
  const ResidualMlp mlp = make_residual_mlp(kSmall);
  const auto forward = [&] { residual_mlp_loss(mlp, false); };
  const PackCount on = count_packs(with_guards(true), forward);
  const PackCount off = count_packs(with_guards(false), forward);
  // Per block, guarded: mm's two operands, tanh's result, dropout's mask (dropout is a multiply
  // by a constant mask), mm's two operands, tanh's result; then h * h's two operands. The first
  // block's W1 is read only for x's gradient, which x does not require.
  EXPECT_EQ(on.calls, 7 * kSmall.layers - 1 + 2);
  // Unguarded, each dropout also keeps its input, for the mask's gradient; and the first W1.
  EXPECT_EQ(off.calls, on.calls + kSmall.layers + 1);
  EXPECT_EQ(off.bytes - on.bytes, (kSmall.layers + 1) * 8 * 32 * 4);  // [8, 32] float32 each
}

}  // namespace
}  // namespace ag::paper
