// create_autodiff_subgraphs: groups differentiable nodes into
// prim::DifferentiableGraph nodes.
//
// The pass walks the graph backwards. A differentiable node becomes a group
// (a singleton at first); the group then tries to absorb the producers of its
// inputs, latest first. A producer is absorbed only if AliasDb can move it
// right before the group without reordering it against a conflicting write, a
// side effect or a data dependency. Walks repeat until nothing merges; groups
// smaller than `min_subgraph_size` are then dissolved again.
//
// The AliasDb that answers the move queries must describe the graph as it is
// after every merge. Two ways to keep it so:
//  - kRebuild: build a fresh AliasDb after every change (O(n) each, O(n^2)
//    for the pass);
//  - kIncremental: update the one AliasDb in place (Note [Incremental alias
//    update] in alias_db.h), O(1) per replaced value.
// Both modes make the same decisions and produce the same graph.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "engine/jit/alias_db.h"
#include "engine/jit/ir.h"

namespace ag::jit {

enum class AliasDbMode { kRebuild, kIncremental };

const char* modeName(AliasDbMode mode);

struct AutodiffSubgraphOptions {
  AliasDbMode mode = AliasDbMode::kIncremental;
  size_t min_subgraph_size = 2;
  // Called after every change to the graph (a singleton group, a merge, an
  // unmerge) with the AliasDb the pass holds at that moment; `what` says
  // which change it was. Property tests compare that db with a fresh one.
  std::function<void(const Graph&, const AliasDb&, const std::string& what)> after_each_change;
};

struct AutodiffSubgraphStats {
  size_t singletons = 0;       // nodes turned into one-node groups
  size_t merges = 0;           // producers absorbed into groups
  size_t unmerged_groups = 0;  // groups dissolved for being too small
  size_t groups = 0;           // groups left at the end
  size_t alias_db_constructions = 0;
  size_t alias_db_elements_created = 0;  // over all AliasDbs the pass used
};

AutodiffSubgraphStats createAutodiffSubgraphs(Graph& graph,
                                              const AutodiffSubgraphOptions& options = {});

}  // namespace ag::jit
