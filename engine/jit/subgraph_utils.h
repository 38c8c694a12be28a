// Building, growing and dissolving prim::DifferentiableGraph nodes ("groups").
//
// Every function reports each live value of the outer graph that it replaces,
// through `on_replace(old, replacement)`, right before `old` is destroyed;
// `replacement` is nullptr when `old` disappears without a successor (it was
// used only inside the group). This is the map that an incremental AliasDb
// update needs (Note [Incremental alias update] in alias_db.h); the functions
// report it directly, so the caller never has to reconstruct which new value
// stands for which old one.
#pragma once

#include <functional>
#include <vector>

#include "engine/jit/ir.h"

namespace ag::jit {

using ValueReplacer = std::function<void(Value* old_value, Value* replacement)>;

// Replaces `n` by a group whose subgraph holds a copy of `n`.
Node* createSingletonGroup(Node* n, const ValueReplacer& on_replace);

// Moves `producer` (a plain node or another group), which must be the node
// right before `group`, into `group`'s subgraph. Producer outputs still used
// outside the group become new group outputs.
void mergeNodeIntoGroup(Node* producer, Node* group, const ValueReplacer& on_replace);

// Replaces `group` by copies of its subgraph's nodes; returns those copies.
std::vector<Node*> inlineGroup(Node* group, const ValueReplacer& on_replace);

// The number of nodes a group holds.
size_t groupSize(const Node* group);

}  // namespace ag::jit
