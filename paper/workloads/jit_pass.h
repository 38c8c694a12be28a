// Seed 002: create_autodiff_subgraphs on a synthetic graph of a given size, with the AliasDb
// rebuilt after every change (the O(n^2) "before") or updated in place (the "after"). The pass
// and the graph generator are engine/jit's; this file only times them.
#pragma once

#include <cstddef>

#include "engine/jit/create_autodiff_subgraphs.h"

namespace ag::paper {

struct JitPassRun {
  double seconds = 0;
  double cpu_seconds = 0;  // this thread's CPU time over the same span (thread_cpu_seconds)
  size_t nodes = 0;        // nodes in the graph before the pass
  size_t merges = 0;
  size_t groups = 0;
  size_t alias_db_constructions = 0;
};

// Builds makeLayeredGraph(num_nodes) and times createAutodiffSubgraphs on it (graph construction
// excluded).
JitPassRun run_jit_pass(size_t num_nodes, jit::AliasDbMode mode);
// Times createAutodiffSubgraphs on a copy of `graph` (the copy excluded).
JitPassRun run_jit_pass(const jit::Graph& graph, jit::AliasDbMode mode);

}  // namespace ag::paper
