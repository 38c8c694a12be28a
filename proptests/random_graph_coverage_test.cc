// random_graph's steps run exactly the ops its random_graph_coverage() names (Note [Generator
// coverage]).
#include <gtest/gtest.h>

#include "proptests/random_graph.h"
#include "proptests/recorded_ops.h"

namespace ag::proptests {
namespace {

TEST(RandomGraphCoverage, StepsRunExactlyTheCoveredOps) {
  std::set<ops::OpId> ran;
  for (int op = 0; op < static_cast<int>(OpKind::kCount); ++op) {
    // Custom Functions refuse to run under a trace; their forwards call mul and sub.
    if (op == static_cast<int>(OpKind::kCustomMul) || op == static_cast<int>(OpKind::kCustomTwo))
      continue;
    for (int shapes = 0; shapes < 36; ++shapes) {  // every pair of the shape family
      GraphSpec spec;
      spec.leaf_shapes = {shapes % 6, shapes / 6};
      spec.steps = {StepSpec{op, 0, 1}};
      RecordedOps recorded;  // the forward only: backward formulas run other ops
      build_graph(spec);
      ran.insert(recorded.ran().begin(), recorded.ran().end());
    }
  }
  EXPECT_EQ(coverage_mismatches(random_graph_coverage, ran), "");
}

}  // namespace
}  // namespace ag::proptests
