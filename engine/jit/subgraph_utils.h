// Building, growing and dissolving prim::DifferentiableGraph nodes ("groups").
//
// Every function reports, through a ValueTracker, how values flow from old to
// new: `copied(from, to)` when a new value `to` (a group output, a copy of a
// node inside a subgraph, a subgraph input) will hold the same run-time
// tensor as `from`, and `dropped(v)` right before `v` is destroyed. A node moved
// into a group (Note [Merging by moving] in subgraph_utils.cc) keeps its values:
// nothing is reported for them. This is
// exactly what an incremental AliasDb update needs (Note [Incremental alias
// update] in alias_db.h); reporting it here means the caller never has to
// reconstruct which new value stands for which old one.
#pragma once

#include <functional>
#include <vector>

#include "engine/jit/ir.h"

namespace ag::jit {

struct ValueTracker {
  std::function<void(const Value* from, Value* to)> copied = [](const Value*, Value*) {};
  std::function<void(const Value* v)> dropped = [](const Value*) {};
};

// Replaces `n` by a group whose subgraph holds `n` (moved there, not copied).
Node* createSingletonGroup(Node* n, const ValueTracker& tracker);

// Moves `producer` (a plain node or another group), which must be the node
// right before `group`, into `group`'s subgraph. Producer outputs still used
// outside the group become new group outputs.
void mergeNodeIntoGroup(Node* producer, Node* group, const ValueTracker& tracker);

// Replaces `group` by copies of its subgraph's nodes; returns those copies.
std::vector<Node*> inlineGroup(Node* group, const ValueTracker& tracker);

// The number of nodes a group holds.
size_t groupSize(const Node* group);

}  // namespace ag::jit
