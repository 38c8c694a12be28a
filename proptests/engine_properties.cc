// The engine's properties on random graphs, each checked under
// every combination of the engine options. Reproduce a failure with RC_PARAMS="seed=N" (the seed
// RapidCheck prints) and the shrunk graph it shows.
#include <thread>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/error.h"
#include "engine/gradcheck.h"
#include "engine/memory/allocator.h"
#include "ops/ops.h"
#include "proptests/fuzz_stats.h"
#include "proptests/graph_gen.h"
#include "proptests/graph_walk.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

EdgeList edges_of(const TensorList& ts) {
  EdgeList out;
  for (const Tensor& t : ts) out.push_back(gradient_edge(t));
  return out;
}

// Picks a random graph (shrinks to smaller valid graphs) and records what it covers.
GraphSpec pick_graph() {
  const GraphSpec spec = *rc::gen::arbitrary<GraphSpec>();
  const int64_t size = static_cast<int64_t>(spec.leaf_shapes.size() + spec.steps.size());
  fuzz_stats().record_graph("dag", size);
  for (const StepSpec& s : spec.steps) fuzz_stats().record("op", step_name(s));
  RC_TAG(size < 10 ? "size 0-9" : size < 30 ? "size 10-29" : "size 30+");
  return spec;
}

void record_options(const EngineOptions& o) { fuzz_stats().record("options", to_string(o)); }

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  return !a.defined() || (a.shape() == b.shape() && a.to_vector() == b.to_vector());
}

// Issue 2: gradients of random DAGs match central finite differences (float64).
AG_PROPERTY(EngineProperties, GradientsMatchFiniteDifferences) {
  const GraphSpec spec = pick_graph();
  const EngineOptions options =
      all_option_combinations()[*rc::gen::inRange<int>(0, EngineOptions::kCombinations)];
  record_options(options);
  OptionsGuard guard(options);
  const BuiltGraph g = build_graph(spec);
  GradcheckResult r = gradcheck(
      [&](const TensorList& leaves) { return weighted_total(build_graph(spec, &leaves).outputs); },
      g.leaves);
  RC_LOG() << r.report << "\n";
  RC_ASSERT(r.passed);
}

// 1. Pruned execution gives bitwise the same gradients as full execution and runs exactly the
//    nodes on some root-to-input path.
AG_PROPERTY(EngineProperties, PrunedExecutionMatchesFullAndRunsExactlyThePaths) {
  const GraphSpec spec = pick_graph();
  TensorList reference;
  {
    OptionsGuard off(EngineOptions::all_off());
    const BuiltGraph g = build_graph(spec);
    reference =
        grad(g.outputs, g.requested,
             GradArgs().grad_outputs(output_grads(g.outputs)).retain_graph().allow_unused());
  }
  for (const EngineOptions& options : all_option_combinations()) {
    record_options(options);
    OptionsGuard guard(options);
    const BuiltGraph g = build_graph(spec);
    reset_counters();
    counters().trace_executed = true;
    TensorList grads =
        grad(g.outputs, g.requested,
             GradArgs().grad_outputs(output_grads(g.outputs)).retain_graph().allow_unused());
    const std::set<uint64_t> executed(counters().executed.begin(), counters().executed.end());
    RC_ASSERT(executed.size() == counters().executed.size());  // nothing ran twice
    RC_ASSERT(executed == nodes_on_paths_to(edges_of(g.outputs), edges_of(g.requested)));
    // Discovery expanded at least every node that can reach an input (soundness of the cuts).
    RC_ASSERT(static_cast<size_t>(counters().nodes_expanded) >=
              nodes_reaching(edges_of(g.outputs), edges_of(g.requested)).size());
    for (size_t i = 0; i < grads.size(); ++i) RC_ASSERT(bitwise_equal(grads[i], reference[i]));
  }
}

// 2. Topological numbers: leaves 0, every other node 1 + max over its children, and a node with
//    a parent refuses to change it.
AG_PROPERTY(EngineProperties, TopologicalNumbers) {
  const GraphSpec spec = pick_graph();
  const BuiltGraph g = build_graph(spec);
  const EdgeList all = edges_of(g.values);  // keeps new accumulators of unused leaves alive
  for (const Node* n : reachable_nodes(all)) {
    uint64_t expected = 0;
    for (const Edge& e : n->next_edges()) {
      if (e.is_valid()) expected = std::max(expected, e.function->topological_nr() + 1);
      if (e.is_valid()) RC_ASSERT(e.function->has_parent());
    }
    RC_ASSERT(n->topological_nr() == expected);
    if (n->num_outputs() == 0) RC_ASSERT(n->topological_nr() == 0u);
    if (n->has_parent() && expected > 0) {
      Node& mutable_node = const_cast<Node&>(*n);
      RC_ASSERT_THROWS_AS(mutable_node.set_next_edges({}), Error);
      RC_ASSERT(n->topological_nr() == expected);
    }
  }
}

// 3. A custom Function sees needs_input_grad(i) true iff the gradient of input i is used by this
//    call, i.e. its edge (node and slot) lies on a path to a requested input (per-call on), or
//    iff input i requires grad (per-call off).
AG_PROPERTY(EngineProperties, CustomFunctionsSeeNeedsInputGradOfThisCall) {
  const GraphSpec spec = pick_graph();
  for (const EngineOptions& options : all_option_combinations()) {
    OptionsGuard guard(options);
    const BuiltGraph g = build_graph(spec);
    GradientUse use(edges_of(g.requested));
    custom_function_log().clear();
    grad(g.outputs, g.requested,
         GradArgs().grad_outputs(output_grads(g.outputs)).retain_graph().allow_unused());
    RC_CLASSIFY(!custom_function_log().empty(), "custom Function ran");
    for (const NeedsRecord& r : custom_function_log()) {
      const Node& node = *static_cast<const Node*>(r.node);
      RC_CLASSIFY(node.num_inputs() == 2, "multi-output custom Function ran");
      for (size_t i = 0; i < 2; ++i) {
        const Edge& e = node.next_edge(i);
        const bool expected =
            e.is_valid() && (!options.per_call_needs_input_grad || use.edge_used(e));
        RC_ASSERT(r.needs[i] == expected);
      }
    }
  }
}

// 4. Concurrent grad() calls over one shared graph, each for different inputs, agree bitwise
//    with the same calls made one after another.
AG_PROPERTY(EngineProperties, ConcurrentGradAgreesWithSequential) {
  const GraphSpec spec = pick_graph();
  const BuiltGraph g = build_graph(spec);
  std::vector<TensorList> sequential;
  for (const Tensor& r : g.requested) {
    sequential.push_back(
        grad(g.outputs, {r},
             GradArgs().grad_outputs(output_grads(g.outputs)).retain_graph().allow_unused()));
  }
  const TensorList grad_outputs = output_grads(g.outputs);
  constexpr int kThreads = 4;
  std::vector<std::vector<TensorList>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread walks the inputs in a different order.
      for (size_t k = 0; k < g.requested.size(); ++k) {
        size_t i = (k + static_cast<size_t>(t)) % g.requested.size();
        results[t].push_back(
            grad(g.outputs, {g.requested[i]},
                 GradArgs().grad_outputs(grad_outputs).retain_graph().allow_unused()));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    for (size_t k = 0; k < g.requested.size(); ++k) {
      size_t i = (k + static_cast<size_t>(t)) % g.requested.size();
      RC_ASSERT(bitwise_equal(results[t][k][0], sequential[i][0]));
    }
  }
}

// 5. After a backward without retain_graph every saved value is freed, whatever node saved it
//    (built-in ops, custom Functions with one or two outputs): live bytes come back to exactly
//    what the caller still holds, the leaves, the outputs and the new .grad tensors.
AG_PROPERTY(EngineProperties, BackwardFreesEverySavedValue) {
  const GraphSpec spec = pick_graph();
  const EngineOptions options =
      all_option_combinations()[*rc::gen::inRange<int>(0, EngineOptions::kCombinations)];
  record_options(options);
  OptionsGuard guard(options);
  const int64_t before = live_bytes();
  TensorList leaves, outputs;
  {
    const BuiltGraph g = build_graph(spec);  // the intermediate values die with g
    leaves = g.leaves;
    outputs = g.outputs;
  }
  backward(outputs, BackwardArgs().grad_tensors(output_grads(outputs)));
  std::set<const Storage*> held;
  int64_t held_bytes = 0;
  auto hold = [&](const Tensor& t) {
    if (t.defined() && held.insert(t.impl()->storage.get()).second) {
      held_bytes += static_cast<int64_t>(t.impl()->storage->nbytes());
    }
  };
  for (const Tensor& t : leaves) hold(t), hold(t.grad());
  for (const Tensor& t : outputs) hold(t);
  RC_ASSERT(live_bytes() - before == held_bytes);
}

// 6. Discovery expands exactly the nodes each cut allows: a node is expanded iff a path of
//    expanded nodes leads to it from a root and neither active cut rules it out (its topological
//    number is below every target's, or its reachability signature misses every target's bit).
//    A cut that silently cuts less (or more) changes the count.
AG_PROPERTY(EngineProperties, DiscoveryExpandsExactlyWhatTheCutsAllow) {
  const GraphSpec spec = pick_graph();
  const BuiltGraph g = build_graph(spec);
  const EdgeList roots = edges_of(g.outputs), targets = edges_of(g.requested);
  for (const EngineOptions& options : all_option_combinations()) {
    record_options(options);
    reset_counters();
    grad(g.outputs, g.requested,
         GradArgs()
             .grad_outputs(output_grads(g.outputs))
             .retain_graph()
             .allow_unused()
             .engine_options(options));
    RC_ASSERT(counters().nodes_expanded == nodes_expanded_under_cuts(roots, targets, options));
  }
}

}  // namespace
}  // namespace ag::proptests
