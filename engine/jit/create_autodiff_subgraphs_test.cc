#include "engine/jit/create_autodiff_subgraphs.h"

#include <gtest/gtest.h>

#include "engine/jit/alias_db_lint.h"
#include "engine/jit/executor.h"
#include "engine/jit/ir_parser.h"
#include "engine/jit/synthetic_graph.h"
#include "engine/jit/verifier.h"
#include "ops/ops.h"

namespace ag::jit {
namespace {

AutodiffSubgraphOptions withMode(AliasDbMode mode, size_t min_size = 2) {
  AutodiffSubgraphOptions o;
  o.mode = mode;
  o.min_subgraph_size = min_size;
  return o;
}

// Runs the pass on a copy in both modes, checking the AliasDb after every
// change, and returns the (identical) printed results.
std::string runBothModes(const Graph& g, size_t min_size = 2) {
  std::string printed[2];
  for (AliasDbMode mode : {AliasDbMode::kRebuild, AliasDbMode::kIncremental}) {
    auto copy = g.copy();
    AutodiffSubgraphOptions o = withMode(mode, min_size);
    o.after_each_change = [](const Graph& graph, const AliasDb& db, const std::string& what) {
      AliasDb fresh(graph);
      auto diff = findAliasDbDifference(graph, db, fresh);
      ASSERT_FALSE(diff.has_value()) << "after " << what << ": " << *diff << "\n"
                                     << toString(graph);
    };
    createAutodiffSubgraphs(*copy, o);
    verify(*copy);
    printed[mode == AliasDbMode::kIncremental] = toString(*copy);
  }
  EXPECT_EQ(printed[0], printed[1]);
  return printed[1];
}

const char* kChain = R"IR(graph(%x : Tensor, %y : Tensor):
  %a : Tensor = aten::mul(%x, %y)
  %b : Tensor = aten::tanh(%a)
  %c : Tensor = aten::add(%b, %x)
  return (%c)
)IR";

TEST(CreateAutodiffSubgraphsTest, MergesAChainIntoOneGroup) {
  auto g = parseGraph(kChain);
  EXPECT_EQ(runBothModes(*g), R"IR(graph(%x : Tensor, %y : Tensor):
  %c : Tensor = prim::DifferentiableGraph(%x, %y) {
    graph(%x : Tensor, %y : Tensor):
      %a : Tensor = aten::mul(%x, %y)
      %b : Tensor = aten::tanh(%a)
      %c : Tensor = aten::add(%b, %x)
      return (%c)
  }
  return (%c)
)IR");
}

TEST(CreateAutodiffSubgraphsTest, ValuesUsedOutsideBecomeGroupOutputs) {
  auto g = parseGraph(R"IR(graph(%x : Tensor):
  %t : Tensor = aten::transpose[dim0=0, dim1=1](%x)
  %e : Tensor = aten::exp(%t)
  prim::Print(%t)
  return (%e)
)IR");
  std::string out = runBothModes(*g);
  EXPECT_NE(out.find("%e : Tensor, %t : Tensor = prim::DifferentiableGraph(%x)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("prim::Print(%t)"), std::string::npos) << out;
}

TEST(CreateAutodiffSubgraphsTest, SmallGroupsAreDissolved) {
  auto g = parseGraph(R"IR(graph(%x : Tensor, %y : Tensor):
  %a : Tensor = aten::mul(%x, %y)
  %w : Tensor = aten::add_(%x, %y)
  %b : Tensor = aten::neg(%w)
  return (%a, %b)
)IR");
  // Nothing can join mul or neg (add_ is not differentiable), so with a
  // minimum size of 2 the graph comes back as it was.
  EXPECT_EQ(runBothModes(*g), toString(*g));
  // With a minimum of 1 each survives as its own group.
  std::string out = runBothModes(*g, /*min_size=*/1);
  EXPECT_NE(out.find("%a : Tensor = prim::DifferentiableGraph(%x, %y)"), std::string::npos) << out;
  EXPECT_NE(out.find("%b : Tensor = prim::DifferentiableGraph(%w)"), std::string::npos) << out;
}

TEST(CreateAutodiffSubgraphsTest, GroupsMergeIntoGroups) {
  // Two pure chains joined at the end; the scan makes groups that then absorb
  // each other.
  auto g = parseGraph(R"IR(graph(%x : Tensor, %y : Tensor):
  %a : Tensor = aten::exp(%x)
  %b : Tensor = aten::tanh(%a)
  %c : Tensor = aten::sigmoid(%y)
  %d : Tensor = aten::relu(%c)
  %e : Tensor = aten::add(%b, %d)
  return (%e)
)IR");
  std::string out = runBothModes(*g);
  EXPECT_EQ(out.find("DifferentiableGraph"), out.rfind("DifferentiableGraph"))
      << out;  // exactly one group
}

// Note [Merging by moving]: the nodes in a group are the graph's own nodes, not copies, and
// their values keep their ids.
TEST(CreateAutodiffSubgraphsTest, MergedNodesAreMovedNotCopied) {
  for (AliasDbMode mode : {AliasDbMode::kRebuild, AliasDbMode::kIncremental}) {
    auto g = parseGraph(kChain);
    const std::vector<Node*> before = g->nodes();
    std::vector<size_t> ids;
    for (Node* n : before) ids.push_back(n->output()->id());
    createAutodiffSubgraphs(*g, withMode(mode));
    ASSERT_EQ(g->numNodes(), 1u);
    const Graph& body = *g->firstNode()->subgraph();
    EXPECT_EQ(body.nodes(), before) << modeName(mode);
    for (size_t i = 0; i < before.size(); ++i) {
      EXPECT_EQ(before[i]->owningGraph(), &body);
      EXPECT_EQ(before[i]->output()->id(), ids[i]);
    }
    verify(*g);
  }
}

TEST(CreateAutodiffSubgraphsTest, PreservesResultsOnALayeredGraph) {
  auto g = makeLayeredGraph(120);
  auto inputs = [] {
    std::vector<double> x(9), w(9);
    for (int i = 0; i < 9; ++i) {
      x[i] = 0.1 * i - 0.3;
      w[i] = 0.05 * (i % 4) + 0.5;
    }
    return std::vector<IValue>{ops::from_vector(x, {3, 3}), ops::from_vector(w, {3, 3})};
  };
  PrintLog log_before;
  PrintLog log_after;
  RunOptions options_before, options_after;
  options_before.log = &log_before;
  options_after.log = &log_after;
  auto before = runGraph(*g, inputs(), options_before);
  std::string transformed = runBothModes(*g);
  auto after = runGraph(*parseGraph(transformed), inputs(), options_after);
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(toString(before[i]), toString(after[i]));
  EXPECT_EQ(log_before, log_after);
  EXPECT_FALSE(log_before.empty());
  EXPECT_NE(transformed.find("DifferentiableGraph"), std::string::npos);
}

// Note [Counting AliasDb work]
// The incremental pass builds one AliasDb and never creates an element after
// that while merging, so its element count is linear in the graph; the
// rebuild pass builds one per change, each linear, so its count is quadratic.
// Tests assert on these counts (never on time).
TEST(CreateAutodiffSubgraphsTest, AliasDbWorkIsLinearIncrementallyAndQuadraticOtherwise) {
  std::vector<AutodiffSubgraphStats> inc, reb;
  const std::vector<size_t> sizes = {100, 200, 400};
  for (size_t n : sizes) {
    auto g1 = makeLayeredGraph(n);
    auto g2 = g1->copy();
    size_t initial_elements = AliasDb(*g1).numElementsCreated();
    inc.push_back(createAutodiffSubgraphs(*g1, withMode(AliasDbMode::kIncremental)));
    reb.push_back(createAutodiffSubgraphs(*g2, withMode(AliasDbMode::kRebuild)));
    EXPECT_EQ(toString(*g1), toString(*g2));

    EXPECT_EQ(inc.back().alias_db_constructions, 1u);
    // Merging and unmerging only share existing elements: none are created.
    EXPECT_EQ(inc.back().alias_db_elements_created, initial_elements);
    EXPECT_EQ(reb.back().alias_db_constructions,
              1 + reb.back().singletons + reb.back().merges + reb.back().unmerged_groups);
    EXPECT_EQ(inc.back().merges, reb.back().merges);
    EXPECT_GT(inc.back().merges, n / 2);
  }
  for (size_t i = 1; i < sizes.size(); ++i) {
    double inc_growth =
        double(inc[i].alias_db_elements_created) / double(inc[i - 1].alias_db_elements_created);
    double reb_growth =
        double(reb[i].alias_db_elements_created) / double(reb[i - 1].alias_db_elements_created);
    double reb_builds =
        double(reb[i].alias_db_constructions) / double(reb[i - 1].alias_db_constructions);
    EXPECT_LT(inc_growth, 2.3) << "size " << sizes[i];  // doubling n ~doubles the work
    EXPECT_GT(reb_growth, 3.5) << "size " << sizes[i];  // ~quadruples it
    EXPECT_GT(reb_builds, 1.8) << "size " << sizes[i];
  }
}

}  // namespace
}  // namespace ag::jit
