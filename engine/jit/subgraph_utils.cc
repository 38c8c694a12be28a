#include "engine/jit/subgraph_utils.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace ag::jit {
namespace {

// The subgraph input standing for outer value `v`, added if `group` does not
// take `v` yet. Searches whichever is shorter: the group's inputs or v's uses
// (a weight may have thousands of uses; a big group many inputs).
Value* innerInputFor(Node* group, Value* v, const ValueTracker& tracker) {
  if (group->inputs().size() <= v->uses().size()) {
    for (size_t i = 0; i < group->inputs().size(); ++i) {
      if (group->input(i) == v) return group->subgraph()->inputs()[i];
    }
  } else {
    for (const Use& u : v->uses()) {
      if (u.user == group) return group->subgraph()->inputs()[u.offset];
    }
  }
  group->addInput(v);
  Graph* sub = group->subgraph();
  Value* inner = sub->addInput(v->type());
  sub->copyNameIfFree(inner, *v);
  tracker.copied(v, inner);
  return inner;
}

// Reports every value of `g` as dropped (the graph is about to be destroyed).
void dropAll(const Graph& g, const ValueTracker& tracker) {
  for (const Value* v : g.inputs()) tracker.dropped(v);
  for (Node* n = g.firstNode(); n != g.returnNode(); n = n->next()) {
    for (const Value* v : n->outputs()) tracker.dropped(v);
  }
}

// Copies `n` into `into` before `point`; inputs are mapped through `env`,
// and the copy's outputs are recorded in `env` and reported as copies.
Node* copyNode(const Node* n, Graph* into, Node* point,
               std::unordered_map<const Value*, Value*>& env, const ValueTracker& tracker) {
  Node* c = into->createClone(n, [&](Value* v) { return env.at(v); });
  c->insertBefore(point);
  for (size_t i = 0; i < n->outputs().size(); ++i) {
    env[n->output(i)] = c->output(i);
    tracker.copied(n->output(i), c->output(i));
  }
  return c;
}

}  // namespace

size_t groupSize(const Node* group) { return group->subgraph()->numNodes(); }

Node* createSingletonGroup(Node* n, const ValueTracker& tracker) {
  if (n->isDifferentiableGraph()) throw IrError("createSingletonGroup: node is already a group");
  Graph* g = n->owningGraph();
  Node* group = g->create(kinds::kDifferentiableGraph, {}, 0);
  group->setSubgraph(std::make_unique<Graph>());
  group->insertBefore(n);

  Graph* sub = group->subgraph();
  std::unordered_map<const Value*, Value*> env;
  for (Value* in : n->inputs()) env[in] = innerInputFor(group, in, tracker);
  Node* inner = copyNode(n, sub, sub->returnNode(), env, tracker);

  for (size_t i = 0; i < n->outputs().size(); ++i) {
    Value* old_out = n->output(i);
    sub->registerOutput(inner->output(i));
    Value* new_out = group->addOutput(old_out->type());
    tracker.copied(old_out, new_out);
    old_out->replaceAllUsesWith(new_out);
    tracker.dropped(old_out);
    g->transferName(old_out, new_out);
  }
  n->destroy();
  return group;
}

void mergeNodeIntoGroup(Node* producer, Node* group, const ValueTracker& tracker) {
  if (!group->isDifferentiableGraph()) throw IrError("mergeNodeIntoGroup: target is not a group");
  if (producer->next() != group)
    throw IrError("mergeNodeIntoGroup: producer must come right before the group");
  Graph* sub = group->subgraph();
  Node* insert_point = sub->firstNode();  // the producer's copy runs first

  // Copy the producer's computation into the subgraph; `inner_out[k]` is the
  // copy's value for producer output k.
  std::unordered_map<const Value*, Value*> env;
  std::vector<Value*> inner_out;
  if (producer->isDifferentiableGraph()) {
    const Graph& body = *producer->subgraph();
    for (size_t i = 0; i < body.inputs().size(); ++i) {
      env[body.inputs()[i]] = innerInputFor(group, producer->input(i), tracker);
    }
    for (Node* n = body.firstNode(); n != body.returnNode(); n = n->next()) {
      copyNode(n, sub, insert_point, env, tracker);
    }
    for (const Value* out : body.outputs()) inner_out.push_back(env.at(out));
    dropAll(body, tracker);
  } else {
    for (Value* in : producer->inputs()) env[in] = innerInputFor(group, in, tracker);
    inner_out = copyNode(producer, sub, insert_point, env, tracker)->outputs();
  }

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
      Value* carried = sub->inputs()[i];
      carried->replaceAllUsesWith(inner_out[k]);
      group->removeInput(i);
      tracker.dropped(carried);
      sub->eraseInput(i);
    }
    sub->copyNameIfFree(inner_out[k], *p);
    if (p->hasUses()) {
      sub->registerOutput(inner_out[k]);
      Value* new_out = group->addOutput(p->type());
      tracker.copied(p, new_out);
      p->replaceAllUsesWith(new_out);
      group->owningGraph()->transferName(p, new_out);
    }
    tracker.dropped(p);
  }
  producer->destroy();
}

std::vector<Node*> inlineGroup(Node* group, const ValueTracker& tracker) {
  Graph* g = group->owningGraph();
  const Graph& body = *group->subgraph();
  std::unordered_map<const Value*, Value*> env;
  for (size_t i = 0; i < body.inputs().size(); ++i) env[body.inputs()[i]] = group->input(i);
  std::vector<Node*> copies;
  for (Node* n = body.firstNode(); n != body.returnNode(); n = n->next()) {
    copies.push_back(copyNode(n, g, group, env, tracker));
  }
  for (size_t i = 0; i < group->outputs().size(); ++i) {
    Value* old_out = group->output(i);
    if (body.outputs()[i]->node() == body.paramNode()) {
      throw IrError("inlineGroup: group output %" + old_out->name() +
                    " passes a group input through");
    }
    Value* replacement = env.at(body.outputs()[i]);
    old_out->replaceAllUsesWith(replacement);
    tracker.dropped(old_out);
    g->transferName(old_out, replacement);
  }
  dropAll(body, tracker);
  group->destroy();
  return copies;
}

}  // namespace ag::jit
