#include "paper/workloads/jit_pass.h"

#include "engine/jit/synthetic_graph.h"
#include "paper/workloads/timing.h"

namespace ag::paper {

JitPassRun run_jit_pass(size_t num_nodes, jit::AliasDbMode mode) {
  return run_jit_pass(*jit::makeLayeredGraph(num_nodes), mode);
}

JitPassRun run_jit_pass(const jit::Graph& original, jit::AliasDbMode mode) {
  std::unique_ptr<jit::Graph> graph = original.copy();
  JitPassRun run;
  run.nodes = graph->numNodes();
  jit::AutodiffSubgraphOptions options;
  options.mode = mode;
  auto start = Clock::now();
  const double cpu_start = thread_cpu_seconds();
  jit::AutodiffSubgraphStats stats = jit::createAutodiffSubgraphs(*graph, options);
  run.cpu_seconds = thread_cpu_seconds() - cpu_start;
  run.seconds = seconds_since(start);
  run.merges = stats.merges;
  run.groups = stats.groups;
  run.alias_db_constructions = stats.alias_db_constructions;
  return run;
}

}  // namespace ag::paper
