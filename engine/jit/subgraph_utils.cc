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

// The subgraph inputs standing for `n`'s inputs, added to `group` where missing.
std::vector<Value*> innerInputsFor(Node* group, const Node* n, const ValueTracker& tracker) {
  std::vector<Value*> inner;
  inner.reserve(n->inputs().size());
  for (Value* in : n->inputs()) inner.push_back(innerInputFor(group, in, tracker));
  return inner;
}

// Makes `group` give out what `v`, an outer value about to move or be copied into it, holds:
// a new group output takes over v's outer uses and its name.
void exportThroughGroup(Value* v, Node* group, const ValueTracker& tracker) {
  Value* new_out = group->addOutput(v->type());
  tracker.copied(v, new_out);
  v->replaceAllUsesWith(new_out);
  group->owningGraph()->transferName(v, new_out);
}

// Note [Merging by moving]
// A plain node joins a group by moving: the very Node, with its output Values, leaves the outer
// graph for the subgraph (Node::moveToGraph). Its values keep their ids, and with them their
// AliasDb elements, so the only copies to report are the new group outputs and subgraph inputs
// (Note [Incremental alias update]). PyTorch's SubgraphUtils clones the node into the subgraph
// and destroys the original instead; that costs a new node, its values, input and use lists and
// a copy of its attributes, and frees as many blocks, per merge. On a graph of 100k nodes those
// blocks are scattered over memory that no cache holds, and the pass's per-node time grew with
// the graph (issue 17's seed 002 target: flat within 1.5x from 1k to 100k nodes). Moving keeps
// the node where the graph's builder put it and allocates only what the group itself gains.
// A producer that is itself a group is still copied node by node (its body's nodes use one
// another's values, which moveToGraph does not allow), as is a group being inlined; both are rare.
void moveProducerIntoGroup(Node* producer, Node* group, const ValueTracker& tracker) {
  Graph* sub = group->subgraph();
  Node* insert_point = sub->firstNode();  // the producer runs first
  std::vector<Value*> inner_inputs = innerInputsFor(group, producer, tracker);

  // Group inputs that carry a producer output are read from the moved output instead. Their
  // group inputs go first (highest offset first, so offsets stay valid); the subgraph inputs
  // that mirror them, which still have users, go once the output has arrived.
  struct Carried {
    size_t offset;
    Value* output;
  };
  std::vector<Carried> carried;
  for (Value* p : producer->outputs()) {
    for (const Use& u : p->uses()) {
      if (u.user == group) carried.push_back({u.offset, p});
    }
  }
  std::sort(carried.begin(), carried.end(),
            [](const Carried& a, const Carried& b) { return a.offset > b.offset; });
  for (const Carried& c : carried) group->removeInput(c.offset);

  // Outputs still used outside become group outputs, which take over their outer names.
  struct Moved {
    Value* value;
    std::string name;  // its name in the outer graph, which it takes in the subgraph if free
    bool exported;
  };
  std::vector<Moved> moved;
  moved.reserve(producer->outputs().size());
  for (Value* p : producer->outputs()) {
    moved.push_back({p, p->name(), p->hasUses()});
    if (p->hasUses()) exportThroughGroup(p, group, tracker);
  }

  producer->moveToGraph(insert_point, inner_inputs);
  for (const Carried& c : carried) {
    Value* mirror = sub->inputs()[c.offset];
    mirror->replaceAllUsesWith(c.output);
    tracker.dropped(mirror);
    sub->eraseInput(c.offset);
  }
  for (const Moved& m : moved) {
    if (sub->isNameFree(m.name)) sub->setName(m.value, m.name);
    if (m.exported) sub->registerOutput(m.value);
  }
}

}  // namespace

size_t groupSize(const Node* group) { return group->subgraph()->numNodes(); }

Node* createSingletonGroup(Node* n, const ValueTracker& tracker) {
  if (n->isDifferentiableGraph()) throw IrError("createSingletonGroup: node is already a group");
  Graph* g = n->owningGraph();
  Node* group = g->create(kinds::kDifferentiableGraph, {}, 0);
  group->setSubgraph(g->newSubgraph());
  group->insertBefore(n);

  // `n` moves into the subgraph (Note [Merging by moving]); its outputs' outer uses and names go
  // to the group's outputs.
  Graph* sub = group->subgraph();
  std::vector<Value*> inner_inputs = innerInputsFor(group, n, tracker);
  for (Value* out : n->outputs()) exportThroughGroup(out, group, tracker);
  n->moveToGraph(sub->returnNode(), inner_inputs);
  for (Value* out : n->outputs()) sub->registerOutput(out);
  return group;
}

void mergeNodeIntoGroup(Node* producer, Node* group, const ValueTracker& tracker) {
  if (!group->isDifferentiableGraph()) throw IrError("mergeNodeIntoGroup: target is not a group");
  if (producer->next() != group)
    throw IrError("mergeNodeIntoGroup: producer must come right before the group");
  if (!producer->isDifferentiableGraph()) return moveProducerIntoGroup(producer, group, tracker);
  Graph* sub = group->subgraph();
  Node* insert_point = sub->firstNode();  // the producer's copy runs first

  // Copy the producer group's body into the subgraph; `inner_out[k]` is the
  // copy's value for producer output k.
  std::unordered_map<const Value*, Value*> env;
  std::vector<Value*> inner_out;
  const Graph& body = *producer->subgraph();
  for (size_t i = 0; i < body.inputs().size(); ++i) {
    env[body.inputs()[i]] = innerInputFor(group, producer->input(i), tracker);
  }
  for (Node* n = body.firstNode(); n != body.returnNode(); n = n->next()) {
    copyNode(n, sub, insert_point, env, tracker);
  }
  for (const Value* out : body.outputs()) inner_out.push_back(env.at(out));
  dropAll(body, tracker);

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
      exportThroughGroup(p, group, tracker);
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
