// Seed 000 (topological-number pruning): differentiable SGD unrolled for 2000 steps. Each step's
// parameters depend on every earlier step, so the graph grows without bound; with the discovery
// cut the work per grad() call must not.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "ops/ops.h"

namespace ag {
namespace {

struct UnrolledSgd {
  Tensor x = ops::uniform({300, 32}, -1, 1, 1);
  std::vector<int64_t> targets;
  Tensor w = ops::uniform({32, 3}, -0.1, 0.1, 2);
  Tensor b = ops::zeros({3});

  UnrolledSgd() {
    for (int64_t i = 0; i < 300; ++i) targets.push_back(i % 3);
    w.set_requires_grad(true);
    b.set_requires_grad(true);
  }

  // One step; returns the nodes discovery expanded.
  int64_t step(const EngineOptions& options) {
    Tensor loss = ops::cross_entropy(ops::addmm(b, x, w), targets);
    reset_counters();
    TensorList g = grad({loss}, {w, b}, GradArgs().create_graph().engine_options(options));
    const int64_t discovered = counters().nodes_expanded;
    w = ops::sub(w, ops::mul(g[0], 0.1));
    b = ops::sub(b, ops::mul(g[1], 0.1));
    return discovered;
  }
};

// The topological number alone expands the same nodes every step. The reachability signature
// (Note [Reachability signature], engine/reach_signature.h) cuts some of those, but a bit
// collision, which depends on the nodes' sequence numbers, can let one through now and then: its
// count moves within the same bound, never above the first thousand steps' highest.
TEST(UnrolledLoop, DiscoveryPerStepIsConstantWithPruning) {
  for (EngineOptions options :
       {EngineOptions().with_prune_by_reachability(false), EngineOptions{}}) {
    UnrolledSgd sgd;
    std::vector<int64_t> discovered;
    for (int i = 1; i <= 2000; ++i) discovered.push_back(sgd.step(options));
    const auto highest = [&](int from, int to) {
      return *std::max_element(discovered.begin() + from, discovered.begin() + to);
    };
    const bool reachability = options.prune_by_reachability;
    if (reachability) {
      EXPECT_LE(highest(1000, 2000), highest(9, 1000));
    } else {
      EXPECT_EQ(discovered[9], discovered[1999]);
    }
    EXPECT_LT(highest(9, 2000), 20) << "reachability cut " << reachability;
  }
}

TEST(UnrolledLoop, DiscoveryPerStepGrowsLinearlyWithoutPruning) {
  UnrolledSgd sgd;
  std::vector<int64_t> discovered;
  for (int i = 1; i <= 300; ++i) discovered.push_back(sgd.step(EngineOptions::all_off()));
  const int64_t per_step = discovered[100] - discovered[99];
  EXPECT_GT(per_step, 0);
  for (int i = 10; i < 300; ++i) EXPECT_EQ(discovered[i] - discovered[i - 1], per_step) << i;
}

TEST(UnrolledLoop, PruningDoesNotChangeTheTrajectory) {
  UnrolledSgd pruned, full;
  for (int i = 0; i < 50; ++i) {
    pruned.step(EngineOptions{});
    full.step(EngineOptions::all_off());
  }
  EXPECT_EQ(pruned.w.to_vector(), full.w.to_vector());
  EXPECT_EQ(pruned.b.to_vector(), full.b.to_vector());
}

}  // namespace
}  // namespace ag
