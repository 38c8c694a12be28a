// The discovery cuts must do their job, not only be sound: on a fixed suite of random DAGs (the
// one //proptests:discovery_excess reports on), each cut expands no more nodes than its measured
// bound. A cut weakened into cutting nothing (or less) passes every soundness property but fails
// here. The exact per-graph counts are checked by EngineProperties.DiscoveryExpandsExactly...
#include <gtest/gtest.h>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "ops/ops.h"
#include "proptests/graph_gen.h"
#include "proptests/graph_walk.h"

namespace ag::proptests {
namespace {

struct SuiteTotals {
  int64_t minimum = 0;  // nodes that can reach a requested input: any sound discovery's floor
  int64_t expanded[3] = {0, 0, 0};
};

const EngineOptions kCuts[3] = {EngineOptions::all_off(),
                                EngineOptions().with_prune_by_reachability(false), EngineOptions()};

SuiteTotals run_suite(int graphs, uint64_t seed) {
  SuiteTotals totals;
  const auto gen = rc::gen::arbitrary<GraphSpec>();
  for (int i = 0; i < graphs; ++i) {
    const GraphSpec spec = gen(rc::Random(seed + i), /*size=*/100).value();
    const BuiltGraph g = build_graph(spec);
    EdgeList roots, targets;
    for (const Tensor& t : g.outputs) roots.push_back(gradient_edge(t));
    for (const Tensor& t : g.requested) targets.push_back(gradient_edge(t));
    totals.minimum += static_cast<int64_t>(nodes_reaching(roots, targets).size());
    TensorList grad_outputs;
    for (const Tensor& o : g.outputs) grad_outputs.push_back(ops::ones_like(o));
    for (int c = 0; c < 3; ++c) {
      reset_counters();
      grad(g.outputs, g.requested,
           GradArgs()
               .grad_outputs(grad_outputs)
               .retain_graph()
               .allow_unused()
               .engine_options(kCuts[c]));
      totals.expanded[c] += counters().nodes_expanded;
    }
  }
  return totals;
}

TEST(DiscoveryCuts, EachCutStaysWithinItsMeasuredBound) {
  const SuiteTotals t = run_suite(400, 1);
  SCOPED_TRACE("minimum " + std::to_string(t.minimum) + ", no cut " +
               std::to_string(t.expanded[0]) + ", topo " + std::to_string(t.expanded[1]) +
               ", topo + signature " + std::to_string(t.expanded[2]));
  ASSERT_GT(t.minimum, 0);
  // Measured on this suite: no cut expands 5.1x the minimum (3910 nodes against 769), the
  // topological number 2.9x (2242), both cuts together exactly the minimum (the 256-bit
  // signature has no costly collision at this size). The bounds leave a little room for changes
  // to the generator; the suite is fixed, so the counts are too.
  EXPECT_GE(t.expanded[0], 4 * t.minimum);
  EXPECT_LE(t.expanded[1] * 10, t.minimum * 32);
  EXPECT_LE(t.expanded[1] * 10, t.expanded[0] * 7);  // the topological cut removes > 30%
  EXPECT_LE(t.expanded[2] * 100, t.minimum * 102);   // within 2% of the minimum
  EXPECT_GE(t.expanded[2], t.minimum);               // and never below it (soundness)
}

}  // namespace
}  // namespace ag::proptests
