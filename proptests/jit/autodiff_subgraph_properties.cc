// Properties of AliasDb and create_autodiff_subgraphs on random IR graphs
// (seed 002: AliasDb updated in place, PyTorch PR 42141). A failure prints the graph's text form
// (the counterexample, shrunk) and RapidCheck's seed; reproduce it with
//   bazel test //proptests/jit:autodiff_subgraph_props_test --test_env=RC_PARAMS="seed=N"

#include "engine/error.h"
#include "engine/jit/alias_db_lint.h"
#include "engine/jit/create_autodiff_subgraphs.h"
#include "engine/jit/executor.h"
#include "engine/jit/ir_parser.h"
#include "engine/jit/verifier.h"
#include "proptests/fuzz_stats.h"
#include "proptests/jit/random_ir_graph.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

// Picks a random IR graph and records its size for the fuzz driver's coverage report.
IrGraphSpec pickGraphSpec() {
  const IrGraphSpec spec = *genGraphSpec();
  ag::proptests::fuzz_stats().record_graph("ir", static_cast<int64_t>(spec.nodes.size()));
  return spec;
}

AutodiffSubgraphOptions optionsFor(AliasDbMode mode, size_t min_size) {
  AutodiffSubgraphOptions o;
  o.mode = mode;
  o.min_subgraph_size = min_size;
  return o;
}

// Everything observable about one run: outputs, inputs afterwards (in-place
// ops may write them) and the print log; or the run-time error.
std::string observe(const Graph& g, const BuiltIrGraph& built) {
  std::vector<IValue> inputs = built.makeInputs();
  PrintLog log;
  RunOptions options;
  options.log = &log;
  std::string text;
  try {
    for (const IValue& v : runGraph(g, inputs, options)) text += "out " + toString(v) + "\n";
  } catch (const Error& e) {
    text += std::string("error ") + e.what() + "\n";
  }
  for (const IValue& v : inputs) text += "in " + toString(v) + "\n";
  for (const std::string& line : log) text += "print " + line + "\n";
  return text;
}

AG_PROPERTY(AutodiffSubgraphProps, RandomGraphsVerifyAndRoundTrip) {
  const auto spec = pickGraphSpec();
  BuiltIrGraph built = buildGraph(spec);
  verify(*built.graph);
  std::string text = toString(*built.graph);
  RC_ASSERT(toString(*parseGraph(text)) == text);
}

AG_PROPERTY(AutodiffSubgraphProps, IncrementalAliasDbEqualsFreshAfterEveryMerge) {
  const auto spec = pickGraphSpec();
  const size_t min_size = *rc::gen::inRange<size_t>(1, 4);
  BuiltIrGraph built = buildGraph(spec);
  std::string original = toString(*built.graph);
  size_t checks = 0;
  AutodiffSubgraphOptions o = optionsFor(AliasDbMode::kIncremental, min_size);
  o.after_each_change = [&](const Graph& g, const AliasDb& db, const std::string& what) {
    ++checks;
    AliasDb fresh(g);
    auto diff = findAliasDbDifference(g, db, fresh);
    if (diff) {
      RC_FAIL("incremental AliasDb differs from a fresh one after " + what + " #" +
              std::to_string(checks) + ": " + *diff + "\ngraph now:\n" + toString(g) +
              "original graph:\n" + original);
    }
  };
  AutodiffSubgraphStats stats = createAutodiffSubgraphs(*built.graph, o);
  RC_ASSERT(checks == stats.singletons + stats.merges + stats.unmerged_groups);
  RC_ASSERT(stats.alias_db_constructions == 1u);
  RC_CLASSIFY(stats.merges > 0, "merged");
  RC_CLASSIFY(stats.groups > 0, "groups left");
}

AG_PROPERTY(AutodiffSubgraphProps, BothModesGiveTheSamePartition) {
  const auto spec = pickGraphSpec();
  const size_t min_size = *rc::gen::inRange<size_t>(1, 4);
  BuiltIrGraph a = buildGraph(spec);
  BuiltIrGraph b = buildGraph(spec);
  AutodiffSubgraphStats sa =
      createAutodiffSubgraphs(*a.graph, optionsFor(AliasDbMode::kRebuild, min_size));
  AutodiffSubgraphStats sb =
      createAutodiffSubgraphs(*b.graph, optionsFor(AliasDbMode::kIncremental, min_size));
  RC_ASSERT(toString(*a.graph) == toString(*b.graph));
  RC_ASSERT(sa.merges == sb.merges);
  RC_ASSERT(sa.alias_db_constructions == 1 + sa.singletons + sa.merges + sa.unmerged_groups);
}

AG_PROPERTY(AutodiffSubgraphProps, TransformedGraphComputesTheSameValues) {
  const auto spec = pickGraphSpec();
  const size_t min_size = *rc::gen::inRange<size_t>(1, 4);
  BuiltIrGraph built = buildGraph(spec);
  std::string original = toString(*built.graph);
  std::string before = observe(*built.graph, built);
  createAutodiffSubgraphs(*built.graph, optionsFor(AliasDbMode::kIncremental, min_size));
  verify(*built.graph);
  std::string after = observe(*built.graph, built);
  if (before != after) {
    RC_FAIL("results differ\noriginal:\n" + original + "transformed:\n" + toString(*built.graph) +
            "before:\n" + before + "after:\n" + after);
  }
  RC_CLASSIFY(before.find("error") != std::string::npos, "runtime error");
}

}  // namespace
}  // namespace ag::proptests
