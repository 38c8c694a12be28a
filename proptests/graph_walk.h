#pragma once

// An independent model of which nodes a backward call must visit and run, computed by walking
// the graph directly (not through the engine), for the properties to compare against.

#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/node.h"
#include "engine/options.h"

namespace ag::proptests {

// Every node reachable from the outputs' grad_fn / accumulators.
std::vector<const Node*> reachable_nodes(const EdgeList& roots);

// Whether a grad() call for `targets` uses the gradient sent along an edge: the edge (node and
// input slot) is a target, or its node must run because one of its own edges is used. Per edge,
// not per node: a multi-output node's other outputs may lie on no path to a target.
class GradientUse {
 public:
  explicit GradientUse(const EdgeList& targets);
  bool edge_used(const Edge& e);
  bool node_runs(const Node* n);  // some next edge is used

 private:
  std::set<std::pair<const Node*, uint32_t>> targets_;
  std::unordered_map<const Node*, bool> runs_;
};

// Nodes reachable from the roots that must run (GradientUse::node_runs): exactly the nodes a
// grad() call executes.
std::set<uint64_t> nodes_on_paths_to(const EdgeList& roots, const EdgeList& targets);

// How many nodes discovery for `targets` expands under the options' cuts, walking the graph
// directly: a node is expanded iff a path of expanded nodes leads to it from a root and no active
// cut rules it out (Note [Topological number], Note [Reachability signature]).
int64_t nodes_expanded_under_cuts(const EdgeList& roots, const EdgeList& targets,
                                  const EngineOptions& options);

// Nodes reachable from the roots that can reach (length >= 0) a target: the least set any sound
// discovery must expand.
std::unordered_set<const Node*> nodes_reaching(const EdgeList& roots, const EdgeList& targets);

}  // namespace ag::proptests
