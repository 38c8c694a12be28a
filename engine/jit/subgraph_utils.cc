#include "engine/jit/subgraph_utils.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace ag::jit {
namespace {

// The subgraph input standing for outer value `v`, added if `group` does not
// take `v` yet. Looked up through v's uses, which keeps this O(uses of v)
// rather than O(inputs of the group).
Value* innerInputFor(Node* group, Value* v) {
  for (const Use& u : v->uses()) {
    if (u.user == group) return group->subgraph()->inputs()[u.offset];
  }
  group->addInput(v);
  Graph* sub = group->subgraph();
  Value* inner = sub->addInput(v->type());
  if (sub->isNameFree(v->name())) sub->setName(inner, v->name());
  return inner;
}

// Gives `v` the name `name` if nothing else in its graph holds it.
void inheritName(Value* v, const std::string& name) {
  if (v->owningGraph()->isNameFree(name)) v->owningGraph()->setName(v, name);
}

}  // namespace

size_t groupSize(const Node* group) { return group->subgraph()->numNodes(); }

Node* createSingletonGroup(Node* n, const ValueReplacer& on_replace) {
  if (n->isDifferentiableGraph()) throw IrError("createSingletonGroup: node is already a group");
  Graph* g = n->owningGraph();
  Node* group = g->create(kinds::kDifferentiableGraph, {}, 0);
  group->setSubgraph(std::make_unique<Graph>());
  group->insertBefore(n);

  Graph* sub = group->subgraph();
  Node* inner = sub->createClone(n, [&](Value* v) { return innerInputFor(group, v); });
  sub->appendNode(inner);

  std::vector<std::string> names;
  for (size_t i = 0; i < n->outputs().size(); ++i) {
    Value* old_out = n->output(i);
    sub->registerOutput(inner->output(i));
    Value* new_out = group->addOutput(old_out->type());
    old_out->replaceAllUsesWith(new_out);
    on_replace(old_out, new_out);
    names.push_back(old_out->name());
  }
  n->destroy();
  for (size_t i = 0; i < names.size(); ++i) inheritName(group->output(i), names[i]);
  return group;
}

void mergeNodeIntoGroup(Node* producer, Node* group, const ValueReplacer& on_replace) {
  if (!group->isDifferentiableGraph()) throw IrError("mergeNodeIntoGroup: target is not a group");
  if (producer->next() != group) throw IrError("mergeNodeIntoGroup: producer must come right before the group");
  Graph* sub = group->subgraph();
  Node* insert_point = sub->firstNode();  // the producer's copy runs first

  // Copy the producer's computation into the subgraph; `inner_out[k]` is the
  // copy's value for producer output k.
  std::vector<Value*> inner_out;
  if (producer->isDifferentiableGraph()) {
    const Graph& body = *producer->subgraph();
    std::unordered_map<const Value*, Value*> env;
    for (size_t i = 0; i < body.inputs().size(); ++i) env[body.inputs()[i]] = innerInputFor(group, producer->input(i));
    for (Node* n = body.firstNode(); n != body.returnNode(); n = n->next()) {
      Node* c = sub->createClone(n, [&](Value* v) { return env.at(v); });
      c->insertBefore(insert_point);
      for (size_t i = 0; i < n->outputs().size(); ++i) env[n->output(i)] = c->output(i);
    }
    for (const Value* out : body.outputs()) inner_out.push_back(env.at(out));
  } else {
    Node* c = sub->createClone(producer, [&](Value* v) { return innerInputFor(group, v); });
    c->insertBefore(insert_point);
    inner_out = c->outputs();
  }

  std::vector<std::pair<Value*, std::string>> renames;
  for (size_t k = 0; k < producer->outputs().size(); ++k) {
    Value* p = producer->output(k);
    // Group inputs that carried `p` now read the copy directly. Remove them
    // from the highest offset down so the offsets stay valid.
    std::vector<size_t> offsets;
    for (const Use& u : p->uses()) {
      if (u.user == group) offsets.push_back(u.offset);
    }
    std::sort(offsets.rbegin(), offsets.rend());
    for (size_t i : offsets) {
      sub->inputs()[i]->replaceAllUsesWith(inner_out[k]);
      group->removeInput(i);
      sub->eraseInput(i);
    }
    inheritName(inner_out[k], p->name());
    if (p->hasUses()) {
      sub->registerOutput(inner_out[k]);
      Value* new_out = group->addOutput(p->type());
      p->replaceAllUsesWith(new_out);
      on_replace(p, new_out);
      renames.emplace_back(new_out, p->name());
    } else {
      on_replace(p, nullptr);
    }
  }
  producer->destroy();
  for (const auto& [v, name] : renames) inheritName(v, name);
}

std::vector<Node*> inlineGroup(Node* group, const ValueReplacer& on_replace) {
  Graph* g = group->owningGraph();
  const Graph& body = *group->subgraph();
  std::unordered_map<const Value*, Value*> env;
  for (size_t i = 0; i < body.inputs().size(); ++i) env[body.inputs()[i]] = group->input(i);
  std::vector<Node*> copies;
  for (Node* n = body.firstNode(); n != body.returnNode(); n = n->next()) {
    Node* c = g->createClone(n, [&](Value* v) { return env.at(v); });
    c->insertBefore(group);
    copies.push_back(c);
    for (size_t i = 0; i < n->outputs().size(); ++i) env[n->output(i)] = c->output(i);
  }
  std::vector<std::pair<Value*, std::string>> renames;
  for (size_t i = 0; i < group->outputs().size(); ++i) {
    Value* old_out = group->output(i);
    if (body.outputs()[i]->node() == body.paramNode()) {
      throw IrError("inlineGroup: group output %" + old_out->name() + " passes a group input through");
    }
    Value* replacement = env.at(body.outputs()[i]);
    old_out->replaceAllUsesWith(replacement);
    on_replace(old_out, replacement);
    renames.emplace_back(replacement, old_out->name());
  }
  group->destroy();
  for (const auto& [v, name] : renames) inheritName(v, name);
  return copies;
}

}  // namespace ag::jit
