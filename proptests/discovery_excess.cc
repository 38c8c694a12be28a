// Measures how close discovery comes to the least possible work on random graphs: the nodes it
// expands against the nodes that can reach a requested input (every sound discovery must expand
// those). Prints one row per cut: none, topological number, topological number + reachability
// signature. Usage: bazel run -c opt //proptests:discovery_excess -- [cases] [seed]
#include <cstdio>
#include <cstdlib>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "ops/ops.h"
#include "proptests/graph_gen.h"
#include "proptests/graph_walk.h"

using namespace ag;
using namespace ag::proptests;

int main(int argc, char** argv) {
  const int cases = argc > 1 ? std::atoi(argv[1]) : 2000;
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  const struct {
    const char* name;
    EngineOptions options;
  } cuts[] = {{"no cut", EngineOptions::all_off()},
              {"topological number", EngineOptions().with_prune_by_reachability(false)},
              {"topo number + reachability signature", EngineOptions()}};
  int64_t expanded[3] = {0, 0, 0};
  int64_t minimum = 0;
  const auto gen = rc::gen::arbitrary<GraphSpec>();
  for (int i = 0; i < cases; ++i) {
    const GraphSpec spec = gen(rc::Random(seed + i), /*size=*/100).value();
    const BuiltGraph g = build_graph(spec);
    EdgeList roots, targets;
    for (const Tensor& t : g.outputs) roots.push_back(gradient_edge(t));
    for (const Tensor& t : g.requested) targets.push_back(gradient_edge(t));
    minimum += static_cast<int64_t>(nodes_reaching(roots, targets).size());
    TensorList grad_outputs;
    for (const Tensor& o : g.outputs) grad_outputs.push_back(ops::ones_like(o));
    for (int c = 0; c < 3; ++c) {
      reset_counters();
      grad(g.outputs, g.requested,
           GradArgs()
               .grad_outputs(grad_outputs)
               .retain_graph()
               .allow_unused()
               .engine_options(cuts[c].options));
      expanded[c] += counters().nodes_expanded;
    }
  }
  std::printf("random-DAG suite: %d graphs (seed %llu, size 100)\n", cases,
              static_cast<unsigned long long>(seed));
  std::printf("%-40s %12s %10s\n", "discovery cut", "expanded", "excess");
  std::printf("%-40s %12lld %10s\n", "exact minimum (nodes reaching an input)",
              static_cast<long long>(minimum), "-");
  for (int c = 0; c < 3; ++c) {
    std::printf("%-40s %12lld %9.1f%%\n", cuts[c].name, static_cast<long long>(expanded[c]),
                100.0 * static_cast<double>(expanded[c] - minimum) / static_cast<double>(minimum));
  }
  return 0;
}
