// Building and querying the AliasDb. Moves live in alias_db_move.cc.
#include "engine/jit/alias_db.h"

#include <algorithm>
#include <sstream>

#include "engine/jit/schema.h"

namespace ag::jit {

AliasDb::AliasDb(const Graph& graph) : id_space_(graph.valueIdSpace()) {
  element_of_.resize(graph.valueIdBound(), kNoElement);
  dag_.reserve(graph.valueIdBound() + 1);  // + the wildcard
  analyzeGraph(graph);
  buildWriteIndex();
}

Element AliasDb::freshElement(const Value* v) {
  Element e = dag_.makeFreshElement();
  setElement(v, e);
  return e;
}

void AliasDb::setElement(const Value* v, Element e) {
  if (v->idSpace() != id_space_) {
    throw IrError("AliasDb: %" + v->name() + " belongs to a graph this db does not analyse");
  }
  if (v->id() >= element_of_.size()) {
    element_of_.resize(std::max(v->id() + 1, v->owningGraph()->valueIdBound()), kNoElement);
  }
  element_of_[v->id()] = e;
}

Element AliasDb::wildcard() {
  if (!has_wildcard_) {
    wildcard_ = dag_.makeFreshElement();
    has_wildcard_ = true;
  }
  return wildcard_;
}

const Element* AliasDb::elementOf(const Value* v) const {
  if (v->id() >= element_of_.size() || v->idSpace() != id_space_) return nullptr;
  const Element& e = element_of_[v->id()];
  return e == kNoElement ? nullptr : &e;
}

void AliasDb::analyzeGraph(const Graph& g) {
  for (const Value* in : g.inputs()) {
    if (isMutableType(in->type())) freshElement(in);
  }
  for (Node* n = g.firstNode(); n != g.returnNode(); n = n->next()) analyzeNode(n);
}

void AliasDb::analyzeSubgraph(const Node* n) {
  const Graph& sub = *n->subgraph();
  for (size_t i = 0; i < n->inputs().size(); ++i) {
    if (const Element* e = elementOf(n->input(i))) setElement(sub.inputs()[i], *e);
  }
  for (Node* inner = sub.firstNode(); inner != sub.returnNode(); inner = inner->next())
    analyzeNode(inner);
  for (size_t i = 0; i < n->outputs().size(); ++i) {
    if (const Element* e = elementOf(sub.outputs()[i])) setElement(n->output(i), *e);
  }
}

void AliasDb::analyzeNode(const Node* n) {
  const OpSchema* s = n->schema();
  if (s == nullptr)
    throw IrError("AliasDb: unknown op '" + n->kind() + "' (run the verifier first)");
  if (!s->written_inputs.empty()) writers_.push_back(n);
  if (n->isDifferentiableGraph()) return analyzeSubgraph(n);

  if (s->inputs_escape_into_container) {
    Element list = freshElement(n->output());
    for (const Value* in : n->inputs()) {
      const Element* e = elementOf(in);
      if (e == nullptr) continue;
      // The memory the input may refer to (not just the input's own element)
      // now may be anything unpacked from a list: a base whose view escaped
      // must alias the wildcard too.
      LocationSet escaped = dag_.memoryLocations(*e);
      for (Element loc : escaped.elements()) {
        if (loc != wildcard()) dag_.makePointerTo(loc, wildcard());
      }
    }
    dag_.addToContainedElements(wildcard(), list);
    return;
  }
  for (size_t i = 0; i < n->outputs().size(); ++i) {
    const Value* out = n->output(i);
    if (!isMutableType(out->type())) continue;
    Element e = freshElement(out);
    if (s->outputs_are_wildcards) {
      dag_.makePointerTo(e, wildcard());
    } else if (i == 0 && s->output_aliases_input >= 0) {
      if (const Element* base = elementOf(n->input(static_cast<size_t>(s->output_aliases_input)))) {
        dag_.makePointerTo(e, *base);
      }
    }
  }
}

// Once every points-to edge is known: the writers' locations are final only then.
void AliasDb::buildWriteIndex() {
  written_.assign(dag_.size(), false);
  for (const Node* n : writers_) {
    const LocationSet written_here = writes(n);
    for (Element loc : written_here.elements()) written_[loc] = true;
  }
  writers_ = {};
}

LocationSet AliasDb::writes(const Node* n) const {
  LocationSet result;
  const OpSchema* s = n->schema();
  if (s == nullptr) return result;
  for (int i : s->written_inputs) {
    if (const Element* e = elementOf(n->input(static_cast<size_t>(i))))
      result.insertAll(dag_.memoryLocations(*e));
  }
  return result;
}

LocationSet AliasDb::reads(const Node* n) const {
  LocationSet result;
  for (const Value* in : n->inputs()) {
    if (const Element* e = elementOf(in)) result.insertAll(dag_.allContainedMemoryLocations(*e));
  }
  return result;
}

LocationSet AliasDb::memoryLocations(const Value* v) const {
  const Element* e = elementOf(v);
  return e == nullptr ? LocationSet() : dag_.memoryLocations(*e);
}

LocationSet AliasDb::containedMemoryLocations(const Value* v) const {
  const Element* e = elementOf(v);
  return e == nullptr ? LocationSet() : dag_.allContainedMemoryLocations(*e);
}

bool AliasDb::mayAlias(const Value* a, const Value* b) const {
  const Element* ea = elementOf(a);
  const Element* eb = elementOf(b);
  if (ea == nullptr || eb == nullptr) return false;
  return dag_.memoryLocations(*ea).intersects(dag_.memoryLocations(*eb));
}

bool AliasDb::mayContainAlias(const Value* a, const Value* b) const {
  const Element* ea = elementOf(a);
  const Element* eb = elementOf(b);
  if (ea == nullptr || eb == nullptr) return false;
  return dag_.allContainedMemoryLocations(*ea).intersects(dag_.allContainedMemoryLocations(*eb));
}

bool AliasDb::hasWriters(const Value* v) const {
  const Element* e = elementOf(v);
  if (e == nullptr) return false;
  for (Element loc : dag_.memoryLocations(*e).elements()) {
    if (loc < written_.size() && written_[loc]) return true;
  }
  return false;
}

bool AliasDb::writesToAlias(const Node* n, const Value* v) const {
  const Element* e = elementOf(v);
  return e != nullptr && writes(n).intersects(dag_.memoryLocations(*e));
}

bool AliasDb::readsFromAlias(const Node* n, const Value* v) const {
  const Element* e = elementOf(v);
  return e != nullptr && reads(n).intersects(dag_.memoryLocations(*e));
}

void AliasDb::copyValue(const Value* from, const Value* to) {
  if (from->type() != to->type()) {
    throw IrError("AliasDb::copyValue: %" + from->name() + " and %" + to->name() +
                  " have different types");
  }
  if (isTracked(to))
    throw IrError("AliasDb::copyValue: %" + to->name() + " already has aliasing information");
  if (const Element* e = elementOf(from)) setElement(to, *e);
}

void AliasDb::forgetValue(const Value* v) {
  if (isTracked(v)) element_of_[v->id()] = kNoElement;
}

void AliasDb::replaceWithNewValue(const Value* existing, const Value* replacement) {
  copyValue(existing, replacement);
  forgetValue(existing);
}

std::string AliasDb::dump() const {
  std::ostringstream os;
  os << "AliasDb with " << dag_.size() << " elements\n";
  for (size_t id = 0; id < element_of_.size(); ++id) {
    if (element_of_[id] == kNoElement) continue;
    os << "  value id " << id << " -> element " << element_of_[id] << " -> locations {";
    for (Element loc : dag_.memoryLocations(element_of_[id]).elements()) os << " " << loc;
    os << " }\n";
  }
  return os.str();
}

}  // namespace ag::jit
