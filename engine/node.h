#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/anomaly_mode.h"
#include "engine/memory/small_vector.h"
#include "engine/reach_signature.h"
#include "engine/removable_handle.h"
#include "engine/tensor.h"

namespace ag {

class Call;
class Node;
class NodeHooks;  // engine/hooks.h
class SlotMasks;  // engine/slot_masks.h

// An edge from a node to the input slot `input_nr` of `function` (the node that computes the
// gradient of one of the forward inputs). An edge without a function means "no gradient needed".
struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  bool is_valid() const { return function != nullptr; }
};
using EdgeList = SmallVector<Edge, 2>;  // Note [Small vectors]

// Shape/dtype/device of one forward output, i.e. of the gradient a node receives in that slot.
struct TensorMeta {
  Shape shape;
  DType dtype = DType::kFloat32;
  Device device = kCPU;
  static TensorMeta of(const Tensor& t) { return {t.shape(), t.dtype(), t.device()}; }
};
using TensorMetaList = SmallVector<TensorMeta, 1>;  // Note [Small vectors]

// Note [Topological number]
// topological_nr is the length of the longest path from a node to any leaf of the graph:
// 0 for nodes without children (AccumulateGrad), else 1 + max over the children. If a node X can
// reach node Y then topo(X) > topo(Y), so discovery for grad(..., inputs) never needs to expand a
// node whose number is below the smallest number among the requested inputs' nodes (engine.cc).
// The number is only valid if it never changes after a parent has read it, so it is frozen the
// first time the node becomes some other node's child: set_next_edges() throws afterwards.
//
// Note [Sequence number]
// sequence_nr counts node creation (process-wide). The ready queue runs the node with the highest
// ready_key() first: its sequence_nr, i.e. the most recently created node first, which matches
// the reverse of forward order; but an AccumulateGrad's key is the largest of all (PyTorch gives
// AccumulateGrad the sequence_nr UINT64_MAX, and its ReadyQueue orders by sequence_nr), so a leaf
// gets its gradient as soon as every part of it has arrived, before anything else runs. Where
// nothing fails, the order changes no result; where a node raises mid-backward, it decides which
// leaves already have .grad and which nodes already freed their saved values. sequence_nr itself
// stays unique (the reachability signature hashes it).
class Node : public std::enable_shared_from_this<Node> {
 public:
  explicit Node(EdgeList&& next_edges = {});
  // A node whose edges lead where gradients of `inputs` go (gradient_edge() of each), built in
  // place: the constructor of every recorded op.
  explicit Node(std::initializer_list<const Tensor*> inputs);
  // Inline, so that a node without hooks is destroyed as it was before hooks: one more test.
  virtual ~Node() {
    if (NodeHooks* hooks = hooks_.load(std::memory_order_relaxed)) delete_hooks(hooks);
  }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Computes gradients for next_edges() from the gradients of this node's outputs; an output
  // that got no gradient has an undefined one (at least one is defined). `call` tells, for this
  // backward call only, which of the results are needed (Note [Per-call view]); an undefined
  // result means "no gradient".
  virtual TensorList apply(TensorList&& grads, const Call& call) = 0;
  virtual std::string name() const = 0;
  // Drops saved tensors after a backward without retain_graph.
  virtual void release_saved() {}

  // What the node keeps for its backward, for describe_graph(): one entry per value it may save.
  struct SavedValue {
    std::string name;
    enum class State { kKept, kReleased, kNotKept } state;
    std::string describe;  // "float32[2, 3]" while kept
    size_t nbytes = 0;     // while kept
  };
  virtual std::vector<SavedValue> saved_values() const { return {}; }

  // Note [Nodes that stand for several ops]
  // The engine decides per node whether it runs (one of its edges carries a used gradient) and
  // then uses every gradient sent into it. A node that stands for several ops, each with its own
  // slots among the node's (engine/jit's DifferentiableGraphBackward), answers per slot, as the
  // ops' own nodes would: a slot counts iff it leads, through its ops, to an edge that counts.
  // Such a node may then have a used edge and still receive nothing, when every gradient sent
  // towards it goes into slots that lead nowhere (as the ops of those slots would not have run):
  // it must not run then, nor may its children wait for it. The engine asks such nodes only
  // through the SlotMasks their kind makes for each backward call (engine/slot_masks.h); the
  // others are never asked.
  bool stands_for_several_ops() const { return stands_for_several_ops_; }
  virtual std::unique_ptr<SlotMasks> new_slot_masks() const;

  // Hooks on this node, as PyTorch's Node.register_prehook and Node.register_hook (Note [Hooks],
  // engine/hooks.h). A pre-hook sees the gradients the node receives (grad_outputs, one per
  // forward output) before apply() and may return replacements, one per slot, or an empty list
  // to keep them; a post-hook sees what apply() returned (grad_inputs, one per next edge) and
  // grad_outputs, and may return replacements of grad_inputs the same way.
  using PreHook = std::function<TensorList(const TensorList& grad_outputs)>;
  using PostHook =
      std::function<TensorList(const TensorList& grad_inputs, const TensorList& grad_outputs)>;
  RemovableHandle register_prehook(PreHook hook);
  RemovableHandle register_hook(PostHook hook);
  // Whether any hook is registered here, those of its outputs' tensors included: the one test
  // a backward pass makes per node for hooks. A load and a branch when none ever was.
  bool has_hooks() const {
    const NodeHooks* hooks = hooks_.load(std::memory_order_acquire);
    return hooks != nullptr && any_hooks(*hooks);
  }
  // This node's hooks, made on first use (engine/hooks.cc).
  NodeHooks& hooks();
  const NodeHooks* hooks_if_any() const { return hooks_.load(std::memory_order_acquire); }
  // Note [Anomaly mode]: the forward call that recorded this node; null unless anomaly mode was
  // on then.
  const ForwardCall* forward_call() const { return forward_call_.get(); }

  const EdgeList& next_edges() const { return next_edges_; }
  const Edge& next_edge(size_t i) const { return next_edges_[i]; }
  size_t num_outputs() const { return next_edges_.size(); }  // gradients apply() returns
  void set_next_edges(EdgeList&& edges);

  // One entry per forward output: the gradients apply() receives.
  const TensorMetaList& input_metadata() const { return input_metadata_; }
  uint32_t add_input_metadata(TensorMeta meta);
  size_t num_inputs() const { return input_metadata_.size(); }

  uint64_t sequence_nr() const { return sequence_nr_; }
  // Note [Sequence number]
  uint64_t ready_key() const { return accumulates_into_leaf_ ? UINT64_MAX : sequence_nr_; }
  // Whether this is a leaf's AccumulateGrad.
  bool accumulates_into_leaf() const { return accumulates_into_leaf_; }
  uint64_t topological_nr() const { return topological_nr_; }
  // Note [Reachability signature]: this node's bit plus the bits of every node it can reach.
  const ReachSignature& reach_signature() const { return reach_signature_; }
  ReachSignature own_signature() const { return ReachSignature::of_key(sequence_nr_); }
  bool has_parent() const { return has_parent_.load(std::memory_order_relaxed); }
  // Note [Saved values detached in place] (engine/saved_variable.h): detach_() on this node's
  // output `output_nr` (the first 64 outputs are tracked).
  void mark_output_detached_in_place(uint32_t output_nr) {
    if (output_nr < 64) detached_outputs_.fetch_or(uint64_t{1} << output_nr);
  }
  bool output_detached_in_place(uint32_t output_nr) const {
    return output_nr < 64 && (detached_outputs_.load(std::memory_order_relaxed) >> output_nr & 1);
  }

 protected:
  struct LeafAccumulator {};  // tag: the constructor of AccumulateGrad
  explicit Node(LeafAccumulator) : Node(EdgeList{}) { accumulates_into_leaf_ = true; }
  struct SeveralOps {};  // tag: Note [Nodes that stand for several ops]
  Node(SeveralOps, EdgeList&& next_edges) : Node(std::move(next_edges)) {
    stands_for_several_ops_ = true;
  }

 private:
  // Note [Topological number]: next_edges_'s number and signature, and their nodes' parent flag.
  void link_next_edges();
  static bool any_hooks(const NodeHooks& hooks);  // engine/hooks.cc
  static void delete_hooks(NodeHooks* hooks);     // engine/hooks.cc

  EdgeList next_edges_;
  TensorMetaList input_metadata_;
  uint64_t sequence_nr_;
  uint64_t topological_nr_ = 0;
  ReachSignature reach_signature_;
  std::atomic<bool> has_parent_{false};
  std::atomic<uint64_t> detached_outputs_{0};  // Note [Saved values detached in place]
  std::atomic<NodeHooks*> hooks_{nullptr};     // owned; made by the first registration
  // Note [Anomaly mode]: the forward call that recorded this node, while anomaly mode was on.
  std::unique_ptr<const ForwardCall> forward_call_;
  bool accumulates_into_leaf_ = false;
  bool stands_for_several_ops_ = false;
};

namespace detail {
Edge leaf_edge(const Tensor& leaf);  // gradient_edge() of a leaf
}  // namespace detail

// The edge along which gradient flows into `t`: its grad_fn, or its AccumulateGrad if it is a
// leaf that requires grad, or an invalid edge (also for a leaf view that requires grad only
// through its base). Inline: every recorded op asks once per input.
inline Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  if (const std::shared_ptr<Node>& fn = t.grad_fn()) return {fn, t.output_nr()};
  return detail::leaf_edge(t);
}

}  // namespace ag
