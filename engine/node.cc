#include "engine/node.h"

#include <algorithm>

#include "engine/accumulate_grad.h"
#include "engine/error.h"
#include "engine/slot_masks.h"

namespace ag {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
}

Node::Node(EdgeList&& next_edges)
    : next_edges_(std::move(next_edges)),
      sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {
  link_next_edges();
  if (anomaly_mode_enabled()) forward_call_ = record_forward_call();
}

Node::Node(std::initializer_list<const Tensor*> inputs)
    : sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {
  next_edges_.reserve(inputs.size());
  for (const Tensor* t : inputs) next_edges_.push_back(gradient_edge(*t));
  link_next_edges();
  if (anomaly_mode_enabled()) forward_call_ = record_forward_call();
}

std::unique_ptr<SlotMasks> Node::new_slot_masks() const {
  return nullptr;  // asked only of nodes that stand for several ops, whose kinds override it
}

namespace {
// The number a node with these edges gets (Note [Topological number]).
uint64_t topological_nr_over(const EdgeList& edges) {
  uint64_t topo = 0;
  for (const Edge& e : edges) {
    if (e.is_valid()) topo = std::max(topo, e.function->topological_nr() + 1);
  }
  return topo;
}
}  // namespace

void Node::set_next_edges(EdgeList&& edges) {
  // Note [Topological number]: a parent already relies on our number.
  const uint64_t topo = topological_nr_over(edges);
  AG_CHECK(!has_parent() || topo == topological_nr_, "set_next_edges: node '", name(),
           "' already has a parent, so its topological_nr (", topological_nr_,
           ") is frozen and cannot become ", topo);
  next_edges_ = std::move(edges);
  link_next_edges();
}

// The number, the signature and the children's parent flags in one pass over the edges: every
// recorded op runs this, and a second loop over the edges would cost each of them.
void Node::link_next_edges() {
  uint64_t topo = 0;
  ReachSignature signature = own_signature();
  for (const Edge& e : next_edges_) {
    if (!e.is_valid()) continue;
    topo = std::max(topo, e.function->topological_nr() + 1);
    signature |= e.function->reach_signature();
    e.function->has_parent_.store(true, std::memory_order_relaxed);
  }
  topological_nr_ = topo;
  reach_signature_ = signature;
}

uint32_t Node::add_input_metadata(TensorMeta meta) {
  input_metadata_.push_back(std::move(meta));
  return static_cast<uint32_t>(input_metadata_.size() - 1);
}

Edge detail::leaf_edge(const Tensor& leaf) {
  // A leaf's own flag: a view that requires grad only through its base has no AccumulateGrad
  // (Note [View flags follow the base] in ops/views.h).
  if (leaf.impl()->requires_grad) return {grad_accumulator(leaf), 0};
  return {};
}

}  // namespace ag
