// The compositions generate exactly the ops that the traits table says they make (Note [Op
// traits]): every step kind with every parameter, on bases of 0 to 3 dims, makes each
// covered op of the list at least once and no excluded one.
#include <gtest/gtest.h>

#include <set>

#include "proptests/ops/composition.h"

namespace ag::proptests {
namespace {

TEST(CompositionCoverage, GeneratesExactlyTheCoveredOps) {
  std::set<ops::OpId> made;
  for (const std::vector<int>& base : std::vector<std::vector<int>>{{}, {1}, {1, 2}, {2, 1, 2}}) {
    for (int kind = 0; kind < 64; ++kind) {
      for (int param = 0; param < 64; ++param) {
        CompositionSpec program;
        program.base_dims = base;
        program.leaves = {LeafSpec{0, 0, true}, LeafSpec{1, 1, false}};
        program.steps = {Step{kind, 0, 1, param}};
        for (const Instr& in : build_plan(program).instrs) {
          if (in.op != Op::kLeaf) made.insert(op_id(in.op));
        }
      }
    }
  }
  for (ops::OpId op : ops::kAllOps) {
    EXPECT_EQ(made.count(op) == 1, made_by(op, kComposition))
        << ops::op_name(op) << ": " << traits(op).how;
  }
}

TEST(CompositionCoverage, NamesAreTheListsNames) {
  EXPECT_STREQ(op_name(Op::kLeaf), "leaf");
  EXPECT_STREQ(op_name(Op::kAddScalar), "add_scalar");
  EXPECT_STREQ(op_name(Op::kSumDim), "sum_dim");
  for (ops::OpId op : ops::kAllOps) EXPECT_EQ(op_id(op_of(op)), op);
}

}  // namespace
}  // namespace ag::proptests
