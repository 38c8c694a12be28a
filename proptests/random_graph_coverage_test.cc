// random_graph's steps run exactly the ops the traits table says random graphs make (Note [Op
// traits]).
#include <gtest/gtest.h>

#include "proptests/random_graph.h"
#include "proptests/recorded_ops.h"

namespace ag::proptests {
namespace {

TEST(RandomGraphCoverage, StepsRunExactlyTheCoveredOps) {
  std::set<ops::OpId> ran;
  for (int op = 0; op < kNumStepChoices; ++op) {
    // Custom Functions refuse to run under a trace; their forwards call mul and sub.
    if (op == static_cast<int>(StepKind::kCustomMul) ||
        op == static_cast<int>(StepKind::kCustomTwo))
      continue;
    for (int shapes = 0; shapes < 36; ++shapes) {  // every pair of the shape family
      for (uint32_t b = 0; b < 16; ++b) {          // both leaves, and every unary op of the table
        GraphSpec spec;
        spec.leaf_shapes = {shapes % 6, shapes / 6};
        spec.steps = {StepSpec{op, 0, b}};
        RecordedOps recorded;  // the forward only: backward formulas run other ops
        build_graph(spec);
        ran.insert(recorded.ran().begin(), recorded.ran().end());
      }
    }
  }
  EXPECT_EQ(coverage_mismatches(kRandomGraph, ran), "");
}

}  // namespace
}  // namespace ag::proptests
