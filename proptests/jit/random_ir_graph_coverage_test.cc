// The random IR graphs hold exactly the aten:: nodes of the ops the traits table says IR graphs
// make (Note [Op traits]): every node kind, on every input shape, and nothing else of the list.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "proptests/jit/random_ir_graph.h"

namespace ag::proptests {
namespace {

TEST(RandomIrGraphCoverage, GraphsHoldExactlyTheCoveredOps) {
  std::set<ops::OpId> made;
  std::set<std::string> unknown;
  for (unsigned op = 0; op < 64; ++op) {
    for (unsigned shape = 0; shape < 5; ++shape) {
      for (unsigned attr = 0; attr < 16; ++attr) {
        IrGraphSpec spec;
        spec.input_shapes = {shape, 0};
        spec.nodes = {IrNodeSpec{op, {0, 1, 0}, attr, false}};
        const BuiltIrGraph built = buildGraph(spec);
        for (const Node* n : built.graph->nodes()) {
          const std::string& kind = n->kind();
          ops::OpId id = ops::OpId::kAdd;
          if (kind.rfind("aten::", 0) != 0) continue;
          if (ops::op_named(kind.c_str() + 6, &id)) {
            made.insert(id);
          } else {
            unknown.insert(kind);
          }
        }
      }
    }
  }
  EXPECT_TRUE(unknown.empty()) << "aten:: nodes that are not ops of the list: " << *unknown.begin();
  for (ops::OpId op : ops::kAllOps) {
    EXPECT_EQ(made.count(op) == 1, ag::proptests::made_by(op, ag::proptests::kIrGraph))
        << ops::op_name(op) << ": " << ag::proptests::traits(op).how;
  }
}

}  // namespace
}  // namespace ag::proptests
