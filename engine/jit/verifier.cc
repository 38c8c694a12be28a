#include "engine/jit/verifier.h"

#include <algorithm>
#include <unordered_set>

#include "engine/jit/schema.h"

namespace ag::jit {
namespace {

[[noreturn]] void reject(const Node& n, const std::string& what) {
  throw IrError("verifier: " + what + "\n  in: " + toString(n));
}

void checkArity(const Node& n, const char* what, size_t actual, size_t declared, bool variadic) {
  bool ok = variadic ? true : actual == declared;
  if (!ok) {
    reject(n, std::string("wrong arity: ") + n.kind() + " takes " + std::to_string(declared) + " " +
                  what + ", got " + std::to_string(actual));
  }
}

void checkTypes(const Node& n, const char* what, const ValueList& values,
                const std::vector<Type>& declared) {
  for (size_t i = 0; i < values.size(); ++i) {
    Type want = declared[std::min(i, declared.size() - 1)];
    if (values[i]->type() != want) {
      reject(n, std::string("type mismatch: ") + n.kind() + " expects " + what + " " +
                    std::to_string(i) + " of type " + typeName(want) + ", got " +
                    typeName(values[i]->type()) + " (%" + values[i]->name() + ")");
    }
  }
}

void checkAttributes(const Node& n, const OpSchema& s) {
  for (const AttributeSpec& spec : s.attributes) {
    auto it = n.attrs().find(spec.name);
    if (it == n.attrs().end()) reject(n, n.kind() + " needs attribute '" + spec.name + "'");
    bool kind_ok =
        (spec.kind == AttributeKind::Int && std::holds_alternative<int64_t>(it->second)) ||
        (spec.kind == AttributeKind::Float && std::holds_alternative<double>(it->second)) ||
        (spec.kind == AttributeKind::Ints &&
         std::holds_alternative<std::vector<int64_t>>(it->second)) ||
        (spec.kind == AttributeKind::Tensor && std::holds_alternative<Tensor>(it->second));
    if (!kind_ok) {
      reject(n, n.kind() + ": attribute '" + spec.name + "' must be of kind " +
                    attributeKindName(spec.kind));
    }
  }
  for (const auto& [name, value] : n.attrs()) {
    bool known = std::any_of(s.attributes.begin(), s.attributes.end(),
                             [&](const AttributeSpec& a) { return a.name == name; });
    if (!known) reject(n, n.kind() + " has no attribute '" + name + "'");
  }
}

// A constant has no inputs and one output, typed by its optional `value`: a float, or a tensor
// (None without a value).
void checkConstant(const Node& n) {
  checkArity(n, "inputs", n.inputs().size(), 0, false);
  checkArity(n, "outputs", n.outputs().size(), 1, false);
  Type want = Type::Tensor;
  for (const auto& [name, value] : n.attrs()) {
    if (name != "value") reject(n, n.kind() + " has no attribute '" + name + "'");
    if (std::holds_alternative<double>(value)) {
      want = Type::Float;
    } else if (!std::holds_alternative<Tensor>(value)) {
      reject(n, n.kind() + ": attribute 'value' must be a float or a tensor");
    }
  }
  checkTypes(n, "output", n.outputs(), {want});
}

void checkDifferentiableGraph(const Node& n) {
  const Graph* sub = n.subgraph();
  if (sub == nullptr) reject(n, "prim::DifferentiableGraph without a subgraph");
  if (sub->inputs().size() != n.inputs().size() || sub->outputs().size() != n.outputs().size()) {
    reject(n, "wrong arity: subgraph has " + std::to_string(sub->inputs().size()) + " inputs and " +
                  std::to_string(sub->outputs().size()) + " outputs, node has " +
                  std::to_string(n.inputs().size()) + " and " + std::to_string(n.outputs().size()));
  }
  for (size_t i = 0; i < n.inputs().size(); ++i) {
    if (sub->inputs()[i]->type() != n.input(i)->type())
      reject(n, "type mismatch: subgraph input " + std::to_string(i));
  }
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    if (sub->outputs()[i]->type() != n.output(i)->type()) {
      reject(n, "type mismatch: subgraph output " + std::to_string(i));
    }
  }
  verify(*sub);
}

void checkUses(const Node& n) {
  for (size_t i = 0; i < n.inputs().size(); ++i) {
    const auto& uses = n.input(i)->uses();
    bool found = std::any_of(uses.begin(), uses.end(),
                             [&](const Use& u) { return u.user == &n && u.offset == i; });
    if (!found)
      reject(n, "internal: input " + std::to_string(i) + " is missing from its value's use list");
  }
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    const Value* v = n.output(i);
    if (v->node() != &n || v->offset() != i)
      reject(n, "internal: output %" + v->name() + " has a stale offset");
    for (const Use& u : v->uses()) {
      if (u.offset >= u.user->inputs().size() || u.user->input(u.offset) != v) {
        reject(n, "internal: %" + v->name() + " has a stale use");
      }
    }
  }
}

}  // namespace

void verify(const Graph& g) {
  std::unordered_set<const Value*> defined(g.inputs().begin(), g.inputs().end());
  const Node* prev = g.paramNode();
  for (Node* n = g.firstNode(); n != g.returnNode(); n = n->next()) {
    if (n->owningGraph() != &g) reject(*n, "internal: node belongs to another graph");
    if (!prev->isBefore(n)) reject(*n, "internal: topological positions out of order");
    prev = n;

    for (Value* in : n->inputs()) {
      if (defined.count(in) == 0) {
        reject(*n, "use before def: %" + in->name() +
                       (in->owningGraph() != &g ? " belongs to another graph"
                                                : " is defined after its use"));
      }
    }
    const OpSchema* s = n->schema();
    if (s == nullptr) reject(*n, "unknown op '" + n->kind() + "'");
    if (n->isDifferentiableGraph()) {
      checkDifferentiableGraph(*n);
    } else if (n->kind() == kinds::kConstant) {
      checkConstant(*n);
    } else {
      if (n->subgraph() != nullptr) reject(*n, n->kind() + " cannot own a subgraph");
      checkArity(*n, "inputs", n->inputs().size(), s->inputs.size(), s->variadic_inputs);
      checkArity(*n, "outputs", n->outputs().size(), s->outputs.size(), s->variadic_outputs);
      checkTypes(*n, "input", n->inputs(), s->inputs);
      checkTypes(*n, "output", n->outputs(), s->outputs);
    }
    if (n->kind() != kinds::kConstant) checkAttributes(*n, *s);
    checkUses(*n);
    for (Value* out : n->outputs()) defined.insert(out);
  }
  for (Value* out : g.outputs()) {
    if (defined.count(out) == 0) {
      throw IrError("verifier: use before def: graph output %" + out->name() +
                    " is not defined in this graph");
    }
  }
  checkUses(*g.paramNode());
  checkUses(*g.returnNode());
}

}  // namespace ag::jit
