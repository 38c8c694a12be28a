#pragma once

// An independent model of which nodes a backward call must visit and run, computed by walking
// the graph directly (not through the engine), for the properties to compare against.

#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/node.h"

namespace ag::proptests {

// Every node reachable from the outputs' grad_fn / accumulators.
std::vector<const Node*> reachable_nodes(const EdgeList& roots);

// Nodes reachable from the roots that have a path of length >= 1 to some target node: exactly
// the nodes a grad() call must execute.
std::set<uint64_t> nodes_on_paths_to(const EdgeList& roots, const EdgeList& targets);

// Nodes reachable from the roots that can reach (length >= 0) a target: the least set any sound
// discovery must expand.
std::unordered_set<const Node*> nodes_reaching(const EdgeList& roots, const EdgeList& targets);

}  // namespace ag::proptests
