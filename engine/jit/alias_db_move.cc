// Topologically valid moves.
//
// To move `to_move` next to `point`, walk from `to_move` towards `point`. Every
// node crossed that depends on what is being moved (a data dependency in
// either direction, a read/write or write/write overlap, or two side effects)
// has to keep its order relative to it, so it joins the working set and
// travels along. Once the walk is done the working set is placed:
//
//   moving forward, before `point`:  to_move, point, <dragged dependents>
//   moving forward, after `point`:   point, to_move, <dragged dependents>
//   moving backward, before `point`: <dragged dependencies>, to_move, point
//   moving backward, after `point`:  <dragged dependencies>, point, to_move
//
// The move fails if `point` itself would have to change sides with a node it
// depends on (or that depends on it).
#include <algorithm>

#include "engine/jit/alias_db.h"
#include "engine/memory/small_vector.h"

namespace ag::jit {

// Note [Reads gathered on demand]
// What a set of nodes reads matters only against a node that writes, and most walks cross no
// writer: the pass merges write-free ops. So the set keeps the nodes whose reads it has not
// gathered yet and takes their union only when the first writer shows up. Gathering a node's
// reads looks up the memory locations of each of its inputs, and a group being merged may have
// hundreds, scattered over a large graph's memory: on a 100k-node graph, gathering eagerly was
// an eighth of the pass.
class AliasDb::WorkingSet {
 public:
  explicit WorkingSet(const AliasDb& db) : db_(db) {}

  void add(Node* n) {
    nodes_.push_back(n);
    ungathered_.push_back(n);
    writes_.insertAll(db_.writes(n));
    side_effects_ = side_effects_ || n->hasSideEffects();
  }

  bool empty() const { return nodes_.empty(); }

  // Must `n` keep its order relative to the nodes in this set?
  bool dependsOn(const Node* n) {
    for (const Value* in : n->inputs()) {
      if (contains(in->node())) return true;
    }
    for (const Value* out : n->outputs()) {
      for (const Use& u : out->uses()) {
        if (contains(u.user)) return true;
      }
    }
    if (side_effects_ && n->hasSideEffects()) return true;
    const LocationSet n_writes = db_.writes(n);
    if (!n_writes.empty() && (n_writes.intersects(writes_) || n_writes.intersects(reads()))) {
      return true;
    }
    return !writes_.empty() && writes_.intersects(db_.reads(n));
  }

 private:
  // A set holds the node being moved and the few it drags along (at most two on the synthetic
  // 100k-node graph): a linear search beats hashing.
  bool contains(const Node* n) const {
    return std::find(nodes_.begin(), nodes_.end(), n) != nodes_.end();
  }

  const LocationSet& reads() {
    for (const Node* n : ungathered_) reads_.insertAll(db_.reads(n));
    ungathered_.clear();
    return reads_;
  }

  const AliasDb& db_;
  SmallVector<const Node*, 4> nodes_;
  SmallVector<const Node*, 4> ungathered_;  // added, reads not in reads_ yet
  LocationSet reads_;
  LocationSet writes_;
  bool side_effects_ = false;
};

bool AliasDb::tryMove(Node* to_move, Node* point, MoveSide side, bool dry_run) {
  const Graph* g = to_move->owningGraph();
  if (point->owningGraph() != g) throw IrError("move: nodes belong to different graphs");
  auto isFixed = [&](const Node* n) { return n == g->paramNode() || n == g->returnNode(); };
  if (isFixed(to_move)) return false;
  if (to_move == point) return true;
  if (side == MoveSide::Before && to_move->next() == point) return true;
  if (side == MoveSide::After && to_move->prev() == point) return true;
  if (isFixed(point) && !(side == MoveSide::Before && point == g->returnNode()) &&
      !(side == MoveSide::After && point == g->paramNode())) {
    return false;
  }

  const bool forward = to_move->isBefore(point);
  // Does `point` itself get crossed (change sides with to_move)?
  const bool crosses_point = forward ? side == MoveSide::After : side == MoveSide::Before;

  WorkingSet moving(*this);
  moving.add(to_move);
  WorkingSet dragged_set(*this);
  std::vector<Node*> dragged;  // in walk order
  for (Node* cur = forward ? to_move->next() : to_move->prev(); cur != point;
       cur = forward ? cur->next() : cur->prev()) {
    if (moving.dependsOn(cur)) {
      moving.add(cur);
      dragged_set.add(cur);
      dragged.push_back(cur);
    }
  }
  // Nothing can be placed after prim::Return or before prim::Param.
  if (isFixed(point) && !dragged.empty()) return false;
  if (crosses_point) {
    if (moving.dependsOn(point)) return false;
  } else if (!dragged.empty() && dragged_set.dependsOn(point)) {
    // The dragged nodes end up on the far side of `point`.
    return false;
  }
  if (dry_run) return true;

  if (side == MoveSide::Before) {
    to_move->moveBefore(point);
  } else {
    to_move->moveAfter(point);
  }
  if (forward) {
    // Dependents follow, in their original order, right after the last of
    // {point, to_move}.
    Node* anchor = side == MoveSide::Before ? point : to_move;
    for (Node* d : dragged) {
      d->moveAfter(anchor);
      anchor = d;
    }
  } else {
    // Dependencies precede, in their original order, the first of {to_move, point}.
    Node* anchor = side == MoveSide::Before ? to_move : point;
    for (Node* d : dragged) {
      d->moveBefore(anchor);
      anchor = d;
    }
  }
  return true;
}

bool AliasDb::moveBeforeTopologicallyValid(Node* n, Node* point) {
  return tryMove(n, point, MoveSide::Before, /*dry_run=*/false);
}
bool AliasDb::moveAfterTopologicallyValid(Node* n, Node* point) {
  return tryMove(n, point, MoveSide::After, /*dry_run=*/false);
}
bool AliasDb::couldMoveBeforeTopologically(Node* n, Node* point) {
  return tryMove(n, point, MoveSide::Before, /*dry_run=*/true);
}
bool AliasDb::couldMoveAfterTopologically(Node* n, Node* point) {
  return tryMove(n, point, MoveSide::After, /*dry_run=*/true);
}

}  // namespace ag::jit
