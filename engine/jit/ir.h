// A small static SSA IR: a Graph owns an ordered list of Nodes; each Node
// consumes Values and defines Values. Graph inputs are the outputs of a
// `prim::Param` node that sits before every other node; graph outputs are the
// inputs of a `prim::Return` node that sits after every other node (and doubles
// as the sentinel of the circular node list).
//
// A `prim::DifferentiableGraph` node owns a subgraph (its body). There are no
// other blocks: the IR has no control flow.
//
// The operators are the op set's: `aten::<name>` is the op whose spec is named <name> in ops/
// (Note [Op schema] in ops/schema.h), with the spec's inputs and attributes; the few `prim::`
// operators are the IR's own (constants, lists, a print, groups; engine/jit/schema.h). Values are
// engine Tensors at run time (engine/jit/executor.h), so aliasing in the IR is the engine's.
//
// Text form (see ir_printer.cc / ir_parser.cc):
//
//   graph(%x : Tensor, %y : Tensor):
//     %t : Tensor = aten::reshape[shape=[6]](%x)
//     %a : Tensor = aten::add_(%t, %y)
//     prim::Print(%a)
//     return (%a)
//
// Naming: engine/jit spells its names in camelCase (Graph::insertNode, AliasDb::mayAlias,
// moveAfterTopologicallyValid), unlike the rest of the project, because it follows PyTorch's JIT
// (torch/csrc/jit) name for name, so that a reader can hold the two side by side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "engine/jit/ir_pool.h"
#include "engine/jit/value_names.h"
#include "engine/memory/small_vector.h"
#include "engine/tensor.h"

namespace ag::jit {

// Every malformed-input condition (parse error, verifier failure, misuse of
// the IR API) throws IrError with a message naming the offending value/node.
class IrError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Types distinguish mutable values (Tensor, Tensor[]), which alias analysis
// tracks, from immutable ones (float), which it ignores. A Tensor value may be
// undefined at run time (prim::Constant() is None, e.g. linear without a bias).
enum class Type { Tensor, TensorList, Float };

const char* typeName(Type t);
bool isMutableType(Type t);

// A tensor attribute is a prim::Constant's value (a traced constant).
using AttributeValue = std::variant<int64_t, double, std::vector<int64_t>, Tensor>;
using Attributes = std::map<std::string, AttributeValue>;

class Graph;
class Node;
struct OpSchema;

struct Use {
  Node* user;
  size_t offset;  // index into user->inputs()
};

// Note [IR memory layout]
// A pass over a large graph is bound by memory, not by instructions: create_autodiff_subgraphs
// runs the same instructions per node at 1k and at 100k nodes, and a graph of 100k nodes is
// tens of megabytes, more than any cache, so every node it reaches costs the cache lines its
// data spans. So a node keeps its data close and small:
//  - a node's inputs and outputs and a value's uses (ValueList, UseList) keep their first
//    elements inside the Node or Value (SmallVector, Note [Small vectors]), where a std::vector put
//    each list in a block of its own, allocated apart (three per node, one per value);
//  - a node's kind is a pointer to shared text (Note [Node kinds] in ir.cc), not a string;
//    its attributes, and a value's name when it is not a number, are held by pointer and
//    allocated only when there are any (most nodes have no attributes, most names are numbers);
//  - what walks read comes first in Node and Value, the rest (kind, attributes, name) last, and a
//    Node starts on a cache line: a walk over the node list (the pass's scan for groups, a move's
//    walk between two nodes) reads one line per node, where a node laid at any 16-byte offset
//    straddled two. Measured on create_autodiff_subgraphs: 10k nodes per-node time from 1.33x
//    that of 1k nodes to 1.04x, for about a tenth more memory;
//  - Nodes and Values come from a pool (IrPool) that a graph shares with its subgraphs, not
//    from the heap one by one: a graph's nodes lie together in the order they were made (a
//    copy of a graph too), even where the heap is fragmented by what the process did before;
//  - create_autodiff_subgraphs moves a node into its group instead of copying it and destroying
//    the original (Note [Merging by moving] in subgraph_utils.cc), so a merge allocates only
//    what the group gains.
// Inline capacities: two inputs and outputs (most ops take one or two and give one), one use
// (most values have one user); longer lists move to the heap, as a std::vector would.
using ValueList = SmallVector<Value*, 2>;
using UseList = SmallVector<Use, 1>;

// Note [Value ids]
// Every value has an id: a small integer, unique among the values of a graph and of the
// subgraphs nested in it (a subgraph draws its ids from the outer graph's counter; one built
// apart is renumbered by setSubgraph), never reused while that graph lives. Analyses over a whole
// graph (AliasDb) keep their per-value facts in vectors indexed by id rather than in maps keyed by
// Value*, which stay fast at any graph size. Ids of different graphs (made apart) may coincide:
// each value also carries its id space, a number shared by a graph and its subgraphs and by no
// other graph of the process, so such a table can tell a value of another graph without looking
// at the value's node.
//
// Note [Value names]
// Every value has a name, unique in its graph: the one it was given (parsed, copied, inherited
// from the value it replaces), or a fresh number. A name that is a number is kept as that number
// (ValueNames), so naming the many unnamed values a pass creates costs no string work.
class Value {
 public:
  Node* node() const { return node_; }
  size_t offset() const { return offset_; }
  Type type() const { return type_; }
  size_t id() const { return id_; }
  // The id space the id belongs to (Graph::valueIdSpace() of its graph), read without
  // touching the defining node.
  uint64_t idSpace() const { return id_space_; }
  std::string name() const { return name_ ? *name_ : std::to_string(number_); }
  const UseList& uses() const { return uses_; }
  bool hasUses() const { return !uses_.empty(); }
  Graph* owningGraph() const;

  // Points every user of this value at `other` instead.
  void replaceAllUsesWith(Value* other);

 private:
  friend class Graph;
  friend class Node;
  Value(Node* node, size_t offset, Type type, size_t id, uint64_t id_space)
      : node_(node),
        id_(id),
        id_space_(id_space),
        type_(type),
        offset_(static_cast<uint32_t>(offset)) {}

  // What passes read on every visit comes first, so that it shares a cache line or two; the
  // name comes last (Note [Compact alias tables] in memory_dag.cc says why bytes matter here).
  Node* node_;
  size_t id_;
  uint64_t id_space_;  // Graph::valueIdSpace() of the graph that drew id_
  UseList uses_;
  Type type_;
  uint32_t offset_;
  uint64_t number_ = 0;                // the name, when name_ is null
  std::unique_ptr<std::string> name_;  // the name, when it is not a number (rare: not inline)
};

namespace kinds {
inline constexpr const char* kParam = "prim::Param";
inline constexpr const char* kReturn = "prim::Return";
inline constexpr const char* kDifferentiableGraph = "prim::DifferentiableGraph";
inline constexpr const char* kConstant = "prim::Constant";
inline constexpr const char* kAutogradAdd = "prim::AutogradAdd";
inline constexpr const char* kListConstruct = "prim::ListConstruct";
inline constexpr const char* kListUnpack = "prim::ListUnpack";
inline constexpr const char* kPrint = "prim::Print";
}  // namespace kinds

// Cache-line aligned (Note [IR memory layout]): what a walk reads sits in the node's first line.
class alignas(64) Node {
 public:
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& kind() const { return *kind_; }
  // The op's schema, or nullptr for an unknown op (the verifier reports it).
  const OpSchema* schema() const { return schema_; }
  Graph* owningGraph() const { return graph_; }

  const ValueList& inputs() const { return inputs_; }
  const ValueList& outputs() const { return outputs_; }
  Value* input(size_t i) const { return inputs_.at(i); }
  Value* output(size_t i = 0) const { return outputs_.at(i); }

  void addInput(Value* v);
  void replaceInput(size_t i, Value* v);
  void removeInput(size_t i);
  Value* addOutput(Type t);
  void eraseOutput(size_t i);  // the output must have no uses

  Attributes& attrs();  // makes the node's (empty) table if it has none yet
  const Attributes& attrs() const;
  int64_t intAttr(const std::string& name) const;
  double floatAttr(const std::string& name) const;
  const std::vector<int64_t>& intsAttr(const std::string& name) const;

  // Only prim::DifferentiableGraph nodes have a subgraph.
  Graph* subgraph() const { return subgraph_.get(); }
  void setSubgraph(std::unique_ptr<Graph> g);

  bool isDifferentiableGraph() const { return is_differentiable_graph_; }
  bool hasSideEffects() const;

  // Position in the owning graph's node list.
  Node* next() const { return next_; }
  Node* prev() const { return prev_; }
  bool isBefore(const Node* other) const;
  bool isAfter(const Node* other) const { return other->isBefore(this); }
  bool isInserted() const { return next_ != nullptr; }

  void insertBefore(Node* n);  // this must not be in the list yet
  void insertAfter(Node* n);
  void moveBefore(Node* n);  // this must be in the list
  void moveAfter(Node* n);

  // Unlinks and deletes the node. Its outputs must have no uses.
  void destroy();

  // Takes the node out of its graph and inserts it before `point`, a node of another graph of
  // the same id space (Note [Value ids]: a graph and its subgraphs), `inputs[i]` (values of that
  // graph) standing in for inputs()[i]. Its outputs, which must have no uses, go with it: the
  // same Value objects, ids unchanged, each keeping its name where that graph has it free and
  // taking a fresh number where not (Note [Merging by moving] in subgraph_utils.cc).
  void moveToGraph(Node* point, const std::vector<Value*>& inputs);

 private:
  friend class Graph;
  friend class Value;
  Node(Graph* graph, const std::string& kind);
  Node(Graph* graph, const std::string& kind, const OpSchema* schema);
  void unlink();
  void removeFromInputUses(size_t i);
  void reserveInputs(size_t n);
  void pushUse(size_t i);

  // What walks over the graph (the node list, alias analysis, moves) read comes first, so that
  // it shares a cache line or two; the kind and the attributes come last. The kind's text is
  // interned (Note [Node kinds] in ir.cc): nodes of one kind share it, as PyTorch's Symbol.
  Graph* graph_;
  const OpSchema* schema_;
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  int64_t topo_position_ = 0;
  bool is_differentiable_graph_;  // read by every walk that looks for groups
  ValueList inputs_;
  ValueList outputs_;  // owned
  // use_slots_[i]: where Use{this, i} sits in inputs_[i]->uses(). Lets a use be
  // removed in O(1) even from a value with very many uses (a weight used by
  // every layer), by moving the last use into its slot.
  SmallVector<size_t, 2> use_slots_;
  std::unique_ptr<Graph> subgraph_;
  const std::string* kind_;
  std::unique_ptr<Attributes> attrs_;  // null while the node has none (most have none)
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Deep copy (subgraphs included); value names are preserved.
  std::unique_ptr<Graph> copy() const;
  // An empty graph that shares this graph's id space and node memory (Note [Value ids], Note
  // [IR memory layout]): the subgraph-to-be of one of this graph's nodes (Node::setSubgraph).
  std::unique_ptr<Graph> newSubgraph() const;

  Value* addInput(Type t, const std::string& name = "");
  void eraseInput(size_t i);  // the input must have no uses
  const ValueList& inputs() const;
  size_t registerOutput(Value* v);
  const ValueList& outputs() const;

  Node* paramNode() const { return param_; }
  Node* returnNode() const { return return_; }
  Node* firstNode() const;  // == returnNode() when the graph has no nodes
  Node* lastNode() const;   // == returnNode() when the graph has no nodes
  size_t numNodes() const { return num_nodes_; }
  std::vector<Node*> nodes() const;  // snapshot, in order

  // Creates a node that is not yet inserted. `num_outputs` < 0 means "the
  // schema's fixed output count". Output types come from the schema (a
  // prim::Constant's from its value attribute); ops with variadic outputs
  // (prim::ListUnpack) need an explicit count.
  Node* create(const std::string& kind, const std::vector<Value*>& inputs, int num_outputs = -1);
  Node* create(const std::string& kind, const std::vector<Value*>& inputs, Attributes attrs,
               int num_outputs);
  // create() + append at the end of the graph.
  Node* appendNode(Node* n);
  Node* append(const std::string& kind, const std::vector<Value*>& inputs, Attributes attrs = {},
               int num_outputs = -1);
  // A prim::Constant appended at the end: a float, a tensor, or None (an undefined tensor).
  Value* appendConstant(double value);
  Value* appendConstant(const Tensor& value);

  // Copies `n` (kind, attributes, subgraph, output types and, where free, names)
  // into a new uninserted node of this graph; `map_input` gives each input's
  // counterpart in this graph.
  template <typename MapInput>
  Node* createClone(const Node* n, MapInput&& map_input);

  // Names are unique per graph (Note [Value names]); an empty name changes nothing.
  void setName(Value* v, const std::string& name);
  bool isNameFree(const std::string& name) const { return names_.find(name) == nullptr; }
  // Gives `v` the name of `from`, a value of any graph, if no value of this graph holds it.
  void copyNameIfFree(Value* v, const Value& from);
  // Hands the name of `from` over to `to`, both of this graph; `from` is about to be destroyed
  // (what a rewrite does when `to` replaces it).
  void transferName(Value* from, Value* to);

  // Every value of this graph and of its subgraphs has an id below this (Note [Value ids]).
  size_t valueIdBound() const { return value_ids_->next; }
  // Graphs that share an id space (a graph and its subgraphs) return the same number, unique
  // in the process.
  uint64_t valueIdSpace() const { return value_ids_->space; }

 private:
  friend class Node;
  friend class Value;
  // What a graph shares with its subgraphs: the id counter and the pool of their nodes' memory.
  struct ValueIds {
    size_t next = 0;     // the next value's id
    uint64_t space = 0;  // tells this counter's ids from another's
    IrPool pool;
  };
  explicit Graph(std::shared_ptr<ValueIds> ids);
  template <typename... Args>
  Node* newNode(Args&&... args);
  void deleteNode(Node* n);
  Value* newValue(Node* n, size_t offset, Type t);
  void deleteValue(Value* v);
  void forgetValue(Value* v);
  void rememberValue(Value* v);  // binds the name `v` holds (its text, or its number) to `v`
  bool nameIsFree(const Value& name_of) const;
  void bindName(Value* v, const Value& name_of);
  // Renumbers this graph's values (and its subgraphs') from `ids`, the counter of the graph
  // this one becomes a subgraph of.
  void adoptValueIds(const std::shared_ptr<ValueIds>& ids);
  void assignTopoPosition(Node* n);
  void renumberTopology();
  Node* cloneNodeShell(const Node* n);

  std::shared_ptr<ValueIds> value_ids_;  // shared with the subgraphs; first: the nodes use it
  Node* param_;
  Node* return_;  // also the sentinel of the circular node list
  size_t num_nodes_ = 0;
  ValueNames names_;
};

template <typename MapInput>
Node* Graph::createClone(const Node* n, MapInput&& map_input) {
  Node* clone = cloneNodeShell(n);
  for (Value* in : n->inputs()) clone->addInput(map_input(in));
  return clone;
}

// Printing (ir_printer.cc): the text form described at the top of this file.
std::string toString(const Graph& g);
std::string toString(const Node& n);  // one line, without subgraph body
std::string attributeToString(const AttributeValue& v);

}  // namespace ag::jit
