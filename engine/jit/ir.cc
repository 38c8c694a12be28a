#include "engine/jit/ir.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <unordered_set>
#include <utility>

#include "engine/jit/schema.h"

namespace ag::jit {

// Note [Topological positions]
// Every node carries an integer position that increases along the node list,
// so `isBefore` is a comparison instead of a walk. New nodes get the midpoint
// of their neighbours' positions; appended nodes get the last position plus a
// large interval. When a gap is used up, the whole graph is renumbered, which
// is rare enough to be amortised away (AliasDb's move queries lean on this).
namespace {
constexpr int64_t kPositionInterval = int64_t{1} << 32;
constexpr int64_t kLowestPosition = std::numeric_limits<int64_t>::min();
constexpr int64_t kHighestPosition = std::numeric_limits<int64_t>::max();

// Each graph made apart starts its own value id space (Note [Value ids]).
std::atomic<uint64_t> next_id_space{0};
}  // namespace

const char* typeName(Type t) {
  switch (t) {
    case Type::Tensor:
      return "Tensor";
    case Type::TensorList:
      return "Tensor[]";
    case Type::Float:
      return "float";
  }
  return "?";
}

bool isMutableType(Type t) { return t != Type::Float; }

// ---------------------------------------------------------------- Value

Graph* Value::owningGraph() const { return node_->owningGraph(); }

void Value::replaceAllUsesWith(Value* other) {
  if (other == this) return;
  if (other->owningGraph() != owningGraph()) {
    throw IrError("replaceAllUsesWith: %" + other->name() + " belongs to another graph");
  }
  // Grow `other`'s uses once (still geometrically: a value may take uses from many calls).
  const size_t needed = other->uses_.size() + uses_.size();
  if (needed > other->uses_.capacity())
    other->uses_.reserve(std::max(needed, 2 * other->uses_.capacity()));
  for (const Use& u : uses_) {
    u.user->inputs_[u.offset] = other;
    u.user->pushUse(u.offset);
  }
  uses_.clear();
}

// ---------------------------------------------------------------- Node

// Note [Node kinds]
// A node's kind is a pointer to one shared copy of its text: the schema's name for an operator
// of the IR, else an entry of a process-wide table of the other kinds met (prim::Param,
// prim::Return, unknown ops that the verifier will report). A node then carries 8 bytes for its
// kind instead of a string (which kept "prim::DifferentiableGraph" on the heap, once per group),
// and copying or moving a node copies a pointer. PyTorch interns kinds the same way (Symbol).
namespace {
const std::string* internKind(const std::string& kind, const OpSchema* schema) {
  if (schema != nullptr && schema->name == kind) return &schema->name;
  static std::mutex mutex;
  static auto* const others = new std::unordered_set<std::string>();  // never destroyed
  std::lock_guard<std::mutex> lock(mutex);
  return &*others->insert(kind).first;
}
}  // namespace

Node::Node(Graph* graph, const std::string& kind) : Node(graph, kind, lookupSchema(kind)) {}

Node::Node(Graph* graph, const std::string& kind, const OpSchema* schema)
    : graph_(graph),
      schema_(schema),
      is_differentiable_graph_(kind == kinds::kDifferentiableGraph),
      kind_(internKind(kind, schema)) {}

Node::~Node() {
  for (Value* v : outputs_) graph_->deleteValue(v);
}

void Node::addInput(Value* v) {
  if (v->owningGraph() != graph_) {
    throw IrError("node " + kind() + ": input %" + v->name() + " belongs to another graph");
  }
  inputs_.push_back(v);
  use_slots_.push_back(0);
  pushUse(inputs_.size() - 1);
}

// Sizing the per-input lists once saves the node two reallocations of each (1, 2, 4 inputs).
void Node::reserveInputs(size_t n) {
  inputs_.reserve(n);
  use_slots_.reserve(n);
}

void Node::pushUse(size_t i) {
  Value* v = inputs_[i];
  use_slots_[i] = v->uses_.size();
  v->uses_.push_back(Use{this, i});
}

void Node::removeFromInputUses(size_t i) {
  auto& uses = inputs_[i]->uses_;
  size_t slot = use_slots_[i];
  Use last = uses.back();
  uses[slot] = last;
  last.user->use_slots_[last.offset] = slot;
  uses.pop_back();
}

void Node::replaceInput(size_t i, Value* v) {
  if (v->owningGraph() != graph_) {
    throw IrError("node " + kind() + ": input %" + v->name() + " belongs to another graph");
  }
  removeFromInputUses(i);
  inputs_.at(i) = v;
  pushUse(i);
}

void Node::removeInput(size_t i) {
  removeFromInputUses(i);
  // Inputs after `i` shift down by one: their Use offsets must follow.
  for (size_t j = i + 1; j < inputs_.size(); ++j) inputs_[j]->uses_[use_slots_[j]].offset = j - 1;
  inputs_.erase(inputs_.begin() + i);
  use_slots_.erase(use_slots_.begin() + i);
}

Value* Node::addOutput(Type t) {
  Value* v = graph_->newValue(this, outputs_.size(), t);
  outputs_.push_back(v);
  return v;
}

void Node::eraseOutput(size_t i) {
  Value* v = outputs_.at(i);
  if (v->hasUses()) throw IrError("eraseOutput: %" + v->name() + " still has uses");
  graph_->forgetValue(v);
  graph_->deleteValue(v);
  outputs_.erase(outputs_.begin() + i);
  for (size_t j = i; j < outputs_.size(); ++j) outputs_[j]->offset_ = j;
}

namespace {
template <typename T>
const T& getAttr(const Node& n, const std::string& name) {
  auto it = n.attrs().find(name);
  if (it == n.attrs().end()) throw IrError(n.kind() + ": missing attribute '" + name + "'");
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  throw IrError(n.kind() + ": attribute '" + name + "' has the wrong kind");
}
}  // namespace

Attributes& Node::attrs() {
  if (attrs_ == nullptr) attrs_ = std::make_unique<Attributes>();
  return *attrs_;
}

const Attributes& Node::attrs() const {
  static const Attributes* const kNone = new Attributes();  // never destroyed
  return attrs_ != nullptr ? *attrs_ : *kNone;
}

int64_t Node::intAttr(const std::string& name) const { return getAttr<int64_t>(*this, name); }
double Node::floatAttr(const std::string& name) const { return getAttr<double>(*this, name); }
const std::vector<int64_t>& Node::intsAttr(const std::string& name) const {
  return getAttr<std::vector<int64_t>>(*this, name);
}

void Node::setSubgraph(std::unique_ptr<Graph> g) {
  if (g != nullptr && g->value_ids_ != graph_->value_ids_) {
    graph_->value_ids_->pool.keepAlive(g->value_ids_);  // g's nodes stay in its pool's memory
    g->adoptValueIds(graph_->value_ids_);
  }
  subgraph_ = std::move(g);
}

bool Node::hasSideEffects() const { return schema_ != nullptr && schema_->has_side_effects; }

bool Node::isBefore(const Node* other) const {
  if (graph_ != other->graph_) throw IrError("isBefore: nodes of different graphs");
  return topo_position_ < other->topo_position_;
}

void Node::insertBefore(Node* n) {
  if (isInserted()) throw IrError("insertBefore: " + kind() + " is already in a graph");
  if (n == graph_->param_) throw IrError("insertBefore: nothing goes before prim::Param");
  next_ = n;
  prev_ = n->prev_;
  prev_->next_ = this;
  n->prev_ = this;
  graph_->num_nodes_++;
  graph_->assignTopoPosition(this);
}

void Node::insertAfter(Node* n) {
  if (n == graph_->param_) {
    insertBefore(graph_->firstNode());
  } else {
    insertBefore(n->next_);
  }
}

void Node::unlink() {
  prev_->next_ = next_;
  next_->prev_ = prev_;
  prev_ = next_ = nullptr;
  graph_->num_nodes_--;
}

void Node::moveBefore(Node* n) {
  if (n == this) return;
  unlink();
  insertBefore(n);
}

void Node::moveAfter(Node* n) {
  if (n == this) return;
  unlink();
  insertAfter(n);
}

void Node::destroy() {
  if (this == graph_->param_ || this == graph_->return_) {
    throw IrError("destroy: cannot destroy " + kind());
  }
  for (Value* v : outputs_) {
    if (v->hasUses())
      throw IrError("destroy: output %" + v->name() + " of " + kind() + " still has uses");
  }
  for (size_t i = 0; i < inputs_.size(); ++i) removeFromInputUses(i);
  inputs_.clear();
  if (isInserted()) unlink();
  for (Value* v : outputs_) graph_->forgetValue(v);
  graph_->deleteNode(this);
}

void Node::moveToGraph(Node* point, const std::vector<Value*>& inputs) {
  Graph* into = point->graph_;
  if (this == graph_->param_ || this == graph_->return_) {
    throw IrError("moveToGraph: cannot move " + kind());
  }
  if (into == graph_ || into->value_ids_ != graph_->value_ids_) {
    throw IrError("moveToGraph: " + kind() + " can only move to another graph of its id space");
  }
  if (point == into->param_) throw IrError("moveToGraph: nothing goes before prim::Param");
  if (inputs.size() != inputs_.size()) {
    throw IrError("moveToGraph: " + kind() + " has " + std::to_string(inputs_.size()) +
                  " inputs, given " + std::to_string(inputs.size()));
  }
  for (Value* v : inputs) {
    if (v->owningGraph() != into)
      throw IrError("moveToGraph: input %" + v->name() + " belongs to another graph");
  }
  for (Value* v : outputs_) {
    if (v->hasUses()) throw IrError("moveToGraph: output %" + v->name() + " still has uses");
  }
  for (size_t i = 0; i < inputs_.size(); ++i) removeFromInputUses(i);
  if (isInserted()) unlink();
  for (Value* v : outputs_) {
    graph_->forgetValue(v);
    if (!into->nameIsFree(*v)) {
      v->name_.reset();
      v->number_ = into->names_.freshNumber();
    }
    into->rememberValue(v);
  }
  graph_ = into;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    inputs_[i] = inputs[i];
    pushUse(i);
  }
  insertBefore(point);
}

// ---------------------------------------------------------------- Graph

template <typename... Args>
Node* Graph::newNode(Args&&... args) {
  return new (value_ids_->pool.allocate(sizeof(Node), alignof(Node)))
      Node(std::forward<Args>(args)...);
}

void Graph::deleteNode(Node* n) {
  n->~Node();
  value_ids_->pool.release(n, sizeof(Node));
}

void Graph::deleteValue(Value* v) {
  v->~Value();
  value_ids_->pool.release(v, sizeof(Value));
}

Graph::Graph() : Graph(std::make_shared<ValueIds>()) { value_ids_->space = next_id_space++; }

Graph::Graph(std::shared_ptr<ValueIds> ids)
    : value_ids_(std::move(ids)),
      param_(newNode(this, kinds::kParam)),
      return_(newNode(this, kinds::kReturn)) {
  return_->next_ = return_->prev_ = return_;  // empty circular list
  param_->topo_position_ = kLowestPosition;
  return_->topo_position_ = kHighestPosition;
}

Graph::~Graph() {
  // Drop all uses first so destruction order does not matter.
  for (Node* n = firstNode(); n != return_;) {
    Node* next = n->next_;
    deleteNode(n);
    n = next;
  }
  deleteNode(return_);
  deleteNode(param_);
}

std::unique_ptr<Graph> Graph::newSubgraph() const {
  return std::unique_ptr<Graph>(new Graph(value_ids_));
}

Value* Graph::newValue(Node* n, size_t offset, Type t) {
  Value* v = new (value_ids_->pool.allocate(sizeof(Value)))
      Value(n, offset, t, value_ids_->next++, value_ids_->space);
  v->number_ = names_.freshNumber();
  names_.bind(v->number_, v);
  return v;
}

void Graph::forgetValue(Value* v) {
  if (v->name_ == nullptr) {
    names_.unbind(v->number_, v);
  } else {
    names_.unbind(*v->name_, v);
  }
}

void Graph::rememberValue(Value* v) {
  if (v->name_ == nullptr) {
    names_.bind(v->number_, v);
  } else {
    names_.bind(*v->name_, v);
  }
}

void Graph::setName(Value* v, const std::string& name) {
  if (name.empty()) return;
  Value* holder = names_.find(name);
  if (holder == v) return;
  if (holder != nullptr) throw IrError("value name %" + name + " is already defined");
  forgetValue(v);
  uint64_t number = 0;
  if (ValueNames::isNumber(name, &number)) {
    v->name_.reset();
    v->number_ = number;
    names_.bind(number, v);
  } else {
    v->name_ = std::make_unique<std::string>(name);
    names_.bind(name, v);
  }
}

bool Graph::nameIsFree(const Value& name_of) const {
  return name_of.name_ == nullptr ? names_.find(name_of.number_) == nullptr
                                  : names_.find(*name_of.name_) == nullptr;
}

// Binds the name that `name_of` holds (in whichever graph) to `v`, which gives up its own.
void Graph::bindName(Value* v, const Value& name_of) {
  const uint64_t number = name_of.number_;
  // A copy: `name_of` may be `v` itself, or another value of `v`'s graph.
  std::unique_ptr<std::string> name =
      name_of.name_ ? std::make_unique<std::string>(*name_of.name_) : nullptr;
  forgetValue(v);
  v->number_ = number;
  v->name_ = std::move(name);
  rememberValue(v);
}

void Graph::copyNameIfFree(Value* v, const Value& from) {
  if (nameIsFree(from)) bindName(v, from);
}

void Graph::transferName(Value* from, Value* to) {
  if (from->owningGraph() != this || to->owningGraph() != this) {
    throw IrError("transferName: %" + from->name() + " and %" + to->name() +
                  " must both belong to this graph");
  }
  if (from == to) return;
  bindName(to, *from);  // `from` keeps its fields but no longer holds the name
}

void Graph::adoptValueIds(const std::shared_ptr<ValueIds>& ids) {
  value_ids_ = ids;
  auto renumber = [&](Value* v) {
    v->id_ = ids->next++;
    v->id_space_ = ids->space;
  };
  for (Value* v : param_->outputs_) renumber(v);
  for (Node* n = firstNode(); n != return_; n = n->next_) {
    for (Value* v : n->outputs_) renumber(v);
    if (n->subgraph_) n->subgraph_->adoptValueIds(ids);
  }
}

Value* Graph::addInput(Type t, const std::string& name) {
  Value* v = param_->addOutput(t);
  setName(v, name);
  return v;
}

void Graph::eraseInput(size_t i) { param_->eraseOutput(i); }

const ValueList& Graph::inputs() const { return param_->outputs(); }

size_t Graph::registerOutput(Value* v) {
  return_->addInput(v);
  return return_->inputs().size() - 1;
}

const ValueList& Graph::outputs() const { return return_->inputs(); }

Node* Graph::firstNode() const { return return_->next_; }
Node* Graph::lastNode() const { return return_->prev_; }

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(num_nodes_);
  for (Node* n = firstNode(); n != return_; n = n->next()) out.push_back(n);
  return out;
}

Node* Graph::create(const std::string& kind, const std::vector<Value*>& inputs, int num_outputs) {
  return create(kind, inputs, Attributes(), num_outputs);
}

Node* Graph::create(const std::string& kind, const std::vector<Value*>& inputs, Attributes attrs,
                    int num_outputs) {
  Node* n = newNode(this, kind);
  n->reserveInputs(inputs.size());
  for (Value* v : inputs) n->addInput(v);
  if (!attrs.empty()) n->attrs_ = std::make_unique<Attributes>(std::move(attrs));
  const OpSchema* s = n->schema();
  if (kind == kinds::kConstant) {  // typed by its value: a float, or a tensor (None without one)
    if (num_outputs >= 0 && num_outputs != 1) {
      deleteNode(n);
      throw IrError("create: prim::Constant has one output");
    }
    const Attributes& node_attrs = std::as_const(*n).attrs();
    auto value = node_attrs.find("value");
    const bool is_float =
        value != node_attrs.end() && std::holds_alternative<double>(value->second);
    n->addOutput(is_float ? Type::Float : Type::Tensor);
    return n;
  }
  if (num_outputs < 0) {
    if (s == nullptr || s->variadic_outputs) {
      deleteNode(n);
      throw IrError("create: " + kind + " needs an explicit output count");
    }
    num_outputs = static_cast<int>(s->outputs.size());
  }
  n->outputs_.reserve(static_cast<size_t>(num_outputs));
  for (int i = 0; i < num_outputs; ++i) {
    Type t = (s != nullptr && !s->outputs.empty())
                 ? s->outputs[std::min(static_cast<size_t>(i), s->outputs.size() - 1)]
                 : Type::Tensor;
    n->addOutput(t);
  }
  return n;
}

Node* Graph::appendNode(Node* n) {
  n->insertBefore(return_);
  return n;
}

Node* Graph::append(const std::string& kind, const std::vector<Value*>& inputs, Attributes attrs,
                    int num_outputs) {
  return appendNode(create(kind, inputs, std::move(attrs), num_outputs));
}

Value* Graph::appendConstant(double value) {
  return append(kinds::kConstant, {}, {{"value", value}})->output();
}

Value* Graph::appendConstant(const Tensor& value) {
  Attributes attrs;
  if (value.defined()) attrs["value"] = value;
  return append(kinds::kConstant, {}, std::move(attrs))->output();
}

Node* Graph::cloneNodeShell(const Node* n) {
  Node* clone = newNode(this, n->kind(), n->schema());
  clone->reserveInputs(n->inputs_.size());  // createClone adds them
  clone->outputs_.reserve(n->outputs_.size());
  if (n->attrs_ != nullptr) clone->attrs_ = std::make_unique<Attributes>(*n->attrs_);
  if (n->subgraph_) clone->setSubgraph(n->subgraph_->copy());
  for (const Value* out : n->outputs()) {
    Value* v = clone->addOutput(out->type());
    copyNameIfFree(v, *out);
  }
  return clone;
}

std::unique_ptr<Graph> Graph::copy() const {
  auto g = std::make_unique<Graph>();
  std::unordered_map<const Value*, Value*> env;
  for (const Value* in : inputs()) env[in] = g->addInput(in->type(), in->name());
  for (Node* n = firstNode(); n != return_; n = n->next()) {
    Node* c = g->createClone(n, [&](Value* v) { return env.at(v); });
    g->appendNode(c);
    for (size_t i = 0; i < n->outputs().size(); ++i) env[n->output(i)] = c->output(i);
  }
  for (const Value* out : outputs()) g->registerOutput(env.at(out));
  return g;
}

void Graph::assignTopoPosition(Node* n) {
  int64_t lo = n->prev_ == return_ ? kLowestPosition : n->prev_->topo_position_;
  int64_t hi = n->next_ == return_ ? kHighestPosition : n->next_->topo_position_;
  if (n->prev_ == return_ && n->next_ == return_) {
    n->topo_position_ = 0;
  } else if (n->next_ == return_) {  // appending
    if (lo > kHighestPosition - 2 * kPositionInterval) return renumberTopology();
    n->topo_position_ = lo + kPositionInterval;
  } else if (n->prev_ == return_) {  // prepending
    if (hi < kLowestPosition + 2 * kPositionInterval) return renumberTopology();
    n->topo_position_ = hi - kPositionInterval;
  } else {
    // Overflow-free midpoint of two positions.
    if (hi - lo < 2) return renumberTopology();
    n->topo_position_ = lo + (hi - lo) / 2;
  }
}

void Graph::renumberTopology() {
  int64_t pos = 0;
  for (Node* n = firstNode(); n != return_; n = n->next_) {
    n->topo_position_ = pos;
    pos += kPositionInterval;
  }
}

}  // namespace ag::jit
