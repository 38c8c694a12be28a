// AliasDb: which values may share memory, which nodes read and write which
// memory, and whether a node can be moved without changing what the graph
// computes.
//
// Note [Alias semantics of ops]
// AliasDb reads each op's OpSchema:
//  - graph inputs of mutable type get fresh elements (callers pass inputs that
//    do not alias each other);
//  - an output that aliases input k (views, in-place ops) gets an element
//    pointing to input k's element;
//  - prim::ListConstruct: the list gets a fresh element; every input
//    *escapes into a container*: its element is made to point to the Tensor
//    wildcard, and the wildcard is contained in the list. So anything put in
//    any list may alias anything else put in any list;
//  - prim::ListUnpack: outputs point to the wildcard (they may be any tensor
//    that ever entered a list);
//  - other mutable outputs get fresh elements; immutable values (float) get
//    none and alias nothing;
//  - a node writes the memory locations of its `written_inputs` and reads the
//    (contained) memory locations of all its mutable inputs;
//  - prim::DifferentiableGraph: its subgraph is analysed in place, its inputs
//    sharing the outer inputs' elements and its outputs the inner outputs'.
//    It writes nothing: only differentiable (non-mutating) ops are merged.
//
// Note [Incremental alias update]
// create_autodiff_subgraphs rewrites the graph one merge at a time. Each merge
// replaces some live values by new ones that hold the same tensors (the
// merged node's outputs become outputs of the DifferentiableGraph node), and
// destroys values that are no longer used outside the group. Because every
// merged op is free of writes, no read/write information changes: the new
// value simply takes over the element of the value it replaces
// (replaceWithNewValue), and a destroyed value is forgotten (forgetValue).
// Elements are never removed, so views of a destroyed value keep pointing
// through its element. When a group is unmerged, the inlined nodes' outputs
// that replace group outputs take those over too, and the remaining inlined
// outputs are analysed as new values (analyzeInlinedNodes). The result is the
// same alias relation a freshly built AliasDb reports (checked by
// findAliasDbDifference after every merge in the property tests), without the
// O(graph) rebuild per merge.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/jit/ir.h"
#include "engine/jit/memory_dag.h"

namespace ag::jit {

class AliasDb {
 public:
  explicit AliasDb(const Graph& graph);

  // Does `v` have an element (is it a live, mutable value known to the db)?
  bool isTracked(const Value* v) const { return element_of_.count(v) != 0; }
  bool mayAlias(const Value* a, const Value* b) const;
  // May anything reachable from `a` (itself or its contents) alias anything
  // reachable from `b`?
  bool mayContainAlias(const Value* a, const Value* b) const;
  // Does any node of the graph write memory that `v` may refer to?
  bool hasWriters(const Value* v) const;
  bool writesToAlias(const Node* n, const Value* v) const;
  bool readsFromAlias(const Node* n, const Value* v) const;

  // Memory locations of `v` (empty for untracked values), and the same
  // including whatever `v` contains.
  LocationSet memoryLocations(const Value* v) const;
  LocationSet containedMemoryLocations(const Value* v) const;
  LocationSet reads(const Node* n) const;
  LocationSet writes(const Node* n) const;

  // Move `n` immediately before/after `point` if that preserves every data
  // dependency, every read/write order on aliasing memory and the order of
  // side effects. Nodes in between that must stay on `n`'s side are moved
  // along with it. Returns false, changing nothing, when no valid move exists.
  bool moveBeforeTopologicallyValid(Node* n, Node* point);
  bool moveAfterTopologicallyValid(Node* n, Node* point);
  // The same checks, without moving anything.
  bool couldMoveBeforeTopologically(Node* n, Node* point);
  bool couldMoveAfterTopologically(Node* n, Node* point);

  // Incremental updates: see Note [Incremental alias update].
  void replaceWithNewValue(Value* existing, Value* replacement);
  void forgetValue(Value* v);
  void analyzeInlinedNodes(const std::vector<Node*>& nodes);

  // Elements created by this db since construction (construction included).
  size_t numElementsCreated() const { return dag_.size(); }
  std::string dump() const;

 private:
  enum class MoveSide { Before, After };
  class WorkingSet;

  void analyzeGraph(const Graph& g);
  void analyzeNode(const Node* n);
  void analyzeSubgraph(const Node* n);
  Element freshElement(const Value* v);
  Element wildcard();
  void buildWriteIndex(const Graph& g);
  const Element* elementOf(const Value* v) const;
  bool tryMove(Node* to_move, Node* point, MoveSide side, bool dry_run);

  MemoryDag dag_;
  std::unordered_map<const Value*, Element> element_of_;
  Element wildcard_ = 0;
  bool has_wildcard_ = false;
  std::vector<bool> written_;  // memory location -> written by some node
};

}  // namespace ag::jit
