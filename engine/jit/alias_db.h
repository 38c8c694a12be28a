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
//    *escapes into a container*: each of its memory locations is made to
//    point to the Tensor wildcard, and the wildcard is contained in the list.
//    So anything put in any list (and every base of it: a view that escapes
//    exposes its base) may alias anything else put in any list;
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
// create_autodiff_subgraphs rewrites the graph one merge at a time, and every
// rewrite only moves values around: the group's new output and the subgraph
// input that mirrors an outer value (and a node's copy, where a group's body is
// copied) all hold the very same tensor as the value they stand for, which is
// then destroyed; a node moved into a group keeps its values, ids and
// elements. Since only differentiable (write-free) ops are ever merged, no
// read/write fact changes either. So the update is: each new value shares the
// element of the value it copies (copyValue), and each destroyed value is
// forgotten (forgetValue); elements are never removed, so a view of a
// destroyed value keeps pointing through its element. subgraph_utils reports
// these copies and drops directly (a ValueTracker), so the pass never has to
// work out which new value replaced which old one.
//
// Values inside groups keep their elements too, just as a fresh AliasDb gives
// elements to subgraph values: that is what makes unmerging (inlining a group
// back) just another round of copies. The result is the same alias relation
// a freshly built AliasDb reports (findAliasDbDifference, checked after every
// change in the property tests), at O(1) per value instead of an O(graph)
// rebuild per merge.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/jit/ir.h"
#include "engine/jit/memory_dag.h"

namespace ag::jit {

class AliasDb {
 public:
  explicit AliasDb(const Graph& graph);

  // Does `v` have an element (is it a live, mutable value known to the db)?
  bool isTracked(const Value* v) const { return elementOf(v) != nullptr; }
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
  // `to` (a new value) holds the same tensor as `from`.
  void copyValue(const Value* from, const Value* to);
  // `v` is about to be destroyed.
  void forgetValue(const Value* v);
  // copyValue(existing, replacement) + forgetValue(existing).
  void replaceWithNewValue(const Value* existing, const Value* replacement);

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
  void setElement(const Value* v, Element e);
  Element wildcard();
  void buildWriteIndex();
  const Element* elementOf(const Value* v) const;
  bool tryMove(Node* to_move, Node* point, MoveSide side, bool dry_run);

  MemoryDag dag_;
  // The element of each tracked value, indexed by value id (Note [Value ids]), kNoElement for
  // ids that have none: 4 bytes per id (Note [Compact alias tables]). Ids are unique only within
  // one graph and its subgraphs, so a value is looked up only if its id is from `id_space_`,
  // the analysed graph's.
  static constexpr Element kNoElement = ~Element{0};
  std::vector<Element> element_of_;
  uint64_t id_space_;
  Element wildcard_ = 0;
  bool has_wildcard_ = false;
  std::vector<bool> written_;         // memory location -> written by some node
  std::vector<const Node*> writers_;  // nodes that write an input, while the db is built
};

}  // namespace ag::jit
