// The random programs run exactly the ops the traits table says JIT programs make (Note [Op
// traits]).
#include <gtest/gtest.h>

#include "proptests/jit/random_program.h"
#include "proptests/recorded_ops.h"

namespace ag::proptests {
namespace {

TEST(RandomProgramCoverage, StepsRunExactlyTheCoveredOps) {
  std::set<ops::OpId> ran;
  for (unsigned op = 0; op < 64; ++op) {
    for (unsigned attr = 0; attr < 16; ++attr) {
      JitProgramSpec spec;
      spec.num_inputs = 2;
      // A computed tensor first, so that the in-place steps have one to write.
      spec.steps = {JitStepSpec{0, 0, 0, 0}, JitStepSpec{op, 2, 1, attr}};
      ag::proptests::RecordedOps recorded;
      runProgram(spec, programInputs(spec, attr % 2 == 0));
      ran.insert(recorded.ran().begin(), recorded.ran().end());
    }
  }
  EXPECT_EQ(ag::proptests::coverage_mismatches(ag::proptests::kJitProgram, ran), "");
}

}  // namespace
}  // namespace ag::proptests
