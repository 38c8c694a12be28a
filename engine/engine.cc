// The backward pass: one GraphTask per call of execute() (Note [The backward pass]).
#include "engine/engine.h"

#include <algorithm>

#include "engine/accumulate_grad.h"
#include "engine/anomaly_mode.h"
#include "engine/call.h"
#include "engine/counters.h"
#include "engine/engine_ops.h"
#include "engine/error.h"
#include "engine/forward_ad.h"
#include "engine/grad_mode.h"
#include "engine/hooks.h"
#include "engine/memory/node_map.h"
#include "engine/scratch_pool.h"
#include "engine/slot_masks.h"

namespace ag {

// Note [The backward pass]
// execute() runs one backward call over the graph that the outputs' grad_fn lead to. Its state
// lives in a GraphTask, never in the nodes (Note [Per-call view]). Four phases; this file gives
// the state they share, then each phase under its number, then the entry points:
//
//   1. mark_targets        each requested input is an edge (node, input slot): capture the
//                          gradient that arrives there, or, for a leaf that backward(inputs=...)
//                          accumulates into, run its AccumulateGrad (as PyTorch's exec_info).
//                          Note the smallest topological number among the targets' nodes and
//                          their signature bits, for the cuts.
//   2. discover            depth-first from the roots. A node that a cut rules out (it cannot
//                          reach a target: Note [Topological number], Note [Reachability
//                          signature]) is recorded but not expanded; the others are expanded once
//                          and listed in post-order (children before parents). Without
//                          allow_unused, every target must have been discovered.
//   3. mark_runs           in post-order: a node runs iff one of its edges carries a used
//                          gradient: it leads to a node that runs, or to a target's slot
//                          (PyTorch's exec_info). Without targets (backward() into every leaf)
//                          every node runs, as in PyTorch, except the AccumulateGrad of a leaf
//                          that no longer requires grad (and has no hooks: Note [Hooks]); a
//                          gradient is then needed (Note [Per-call view]) iff it leads to a leaf
//                          that wants it, or its node has a post-hook (Note [Post-hooks see every
//                          executed gradient], engine/hooks.h). In the
//                          same pass, each node that runs adds one dependency to every node its
//                          used gradients go to: a node waits for one gradient per used edge. A
//                          node that stands for several ops counts per slot instead: the call's
//                          SlotMasks decide, and may undo runs that would receive nothing (Note
//                          [Nodes that stand for several ops], engine/node.h).
//   4. run_ready_nodes     seed the roots' gradients; then, while a node is ready, take the one
//                          with the highest ready_key() (Note [Sequence number]), capture the
//                          gradients its target slots hold, and if it runs: apply() it with a
//                          Call, free its saved values unless retain_graph, and send each output
//                          along its edge if that gradient is used, summing gradients that meet.
//                          A node with hooks runs them around the capture or the apply (Note
//                          [Hooks], engine/hooks.h); in anomaly mode, errors and NaN gradients
//                          name the node's forward call (Note [Anomaly mode]).
//
// Gradients a node does not receive stay undefined (no zeros are made for them), as in PyTorch.

namespace {

// The state of one call, which the phases fill in turn.

// What one backward call knows about one node.
struct NodeState {
  bool discovered = false;   // reached from a root (2); expanded unless a cut ruled it out
  bool runs = false;         // apply() runs (3)
  bool wanted = false;       // without targets: leads to a leaf that requires grad (3)
  bool target_runs = false;  // a leaf's AccumulateGrad that backward(inputs=...) runs (1)
  bool queued = false;       // pushed onto the ready heap (4)
  int dependencies = 0;      // used gradients still to arrive (3)
  TensorList buffer;         // the gradients received so far, one per input slot
  std::vector<std::pair<uint32_t, size_t>> captures;  // (input slot, target index) (1)
  // For a node that stands for several ops, the input slots that count, from the call's
  // SlotMasks (3): with targets, those whose gradients it uses; without, those that lead to a
  // leaf that wants a gradient. Null for the other nodes, whose slots all count.
  const std::vector<char>* used_slots = nullptr;
  const std::vector<char>* wanted_slots = nullptr;
  // Without targets, for a node wanted only in some slots (the slots of tensors that retain grad
  // there, not the node's other gradients: gradients_hooks_want, engine/hooks.h): those slots,
  // which wanted_slots then points to.
  std::vector<char> own_wanted_slots;

  // Whether the gradient arriving in input slot `slot` is used: by apply(), or as a capture.
  // Per slot, not per node: a multi-output node's other outputs may lie on no path to a target.
  bool uses_gradient(uint32_t slot) const {
    if (runs && (used_slots == nullptr || (*used_slots)[slot])) return true;
    for (const auto& capture : captures) {
      if (capture.first == slot) return true;
    }
    return false;
  }
  bool uses_any_gradient() const { return runs || !captures.empty(); }
  // Without targets: whether the gradient arriving in input slot `slot` is wanted (3).
  bool wants_gradient(uint32_t slot) const {
    return wanted && (wanted_slots == nullptr || (*wanted_slots)[slot]);
  }

  // Note [Reused node states] (engine/memory/node_map.h): empties the state for a node of a
  // later call, keeping the vectors' memory.
  void reset() {
    discovered = runs = wanted = target_runs = queued = false;
    dependencies = 0;
    buffer.clear();
    captures.clear();
    used_slots = wanted_slots = nullptr;
    own_wanted_slots.clear();
  }
};

// The containers of one backward call, reused by the next one on this thread (scratch_pool.h).
struct Scratch {
  NodeMap<NodeState> nodes;
  std::vector<std::pair<Node*, size_t>> stack;  // discovery: (node, next edge to follow)
  std::vector<Node*> post_order;                // expanded nodes, children before parents
  std::vector<Node*> ready;                     // a heap ordered by ready_key()

  void clear() {
    nodes.clear();
    stack.clear();
    post_order.clear();
    ready.clear();
  }
};

class GraphTask final : public ExecPlan, private SlotMasks::Marks {
 public:
  GraphTask(const ExecuteRequest& request, Scratch& scratch)
      : request_(request),
        nodes_(scratch.nodes),
        stack_(scratch.stack),
        post_order_(scratch.post_order),
        ready_(scratch.ready) {}

  // Phases 1 to 3 only: which nodes discovery expands and which would run.
  ExecutionPlan plan() {
    mark_targets();
    discover();
    mark_runs();
    ExecutionPlan plan;
    for (Node* node : post_order_) {
      plan.expanded.push_back(node);
      if (!state_of(node).runs) continue;
      plan.runs.push_back(node);
      for (size_t i = 0; i < node->num_outputs(); ++i) {
        if (gradient_used(node->next_edge(i))) plan.used_edges.emplace_back(node, i);
      }
    }
    return plan;
  }

  TensorList run() {
    mark_targets();
    discover();
    check_targets_reached();
    mark_runs();
    seed_roots();
    run_ready_nodes();
    return std::move(captured_);
  }

  bool gradient_used(const Edge& edge) const override {
    const NodeState* state = nodes_.find(edge.function.get());
    if (state == nullptr) return false;
    if (!request_.targets.empty()) return state->uses_gradient(edge.input_nr);
    return state->wants_gradient(edge.input_nr);
  }
  bool on_executed_path(const Edge& edge) const override {
    // Without targets every node runs (mark_runs_into_every_leaf); with them, as used.
    return request_.targets.empty() || gradient_used(edge);
  }
  void send_now(const Node& from, size_t i, Tensor&& grad) override;
  Tensor* sum_target(const Node& from, size_t i) override;

 private:
  void mark_targets();
  void discover();
  bool cut(const Node& node) const;
  void check_targets_reached() const;
  void mark_runs();
  void mark_runs_into_every_leaf();
  template <typename Counts>
  const std::vector<char>* mark_slots(const Node& node, Counts edge_counts);
  // SlotMasks::Marks, for masks_->finish() (3).
  const EdgeList& roots() const override { return request_.roots; }
  const std::vector<Node*>& post_order() const override { return post_order_; }
  bool runs(const Node& node) const override { return state_of(&node).runs; }
  bool uses_gradient(const Edge& edge) const override {
    return state_of(edge.function.get()).uses_gradient(edge.input_nr);
  }
  void cancel_run(const Node& node) override;
  void seed_roots();
  void run_ready_nodes();
  TensorList call(Node& node, TensorList&& grads);
  [[gnu::always_inline]] inline TensorList call_node(Node& node, TensorList&& grads);
  TensorList apply(Node& node, TensorList&& grads);
  // The state of the node that output i of `from` goes to, if that gradient is used.
  NodeState* receiver(const Node& from, size_t i);
  void add_to_buffer(const Node& from, size_t i, NodeState& child, Tensor&& grad);
  void send(const Node& from, TensorList& outputs);
  void enqueue(Node* node, NodeState& state);
  const NodeState& state_of(const Node* node) const { return *nodes_.find(node); }

  const ExecuteRequest& request_;
  NodeMap<NodeState>& nodes_;
  std::vector<std::pair<Node*, size_t>>& stack_;
  std::vector<Node*>& post_order_;
  std::vector<Node*>& ready_;
  uint64_t min_target_topo_nr_ = UINT64_MAX;
  ReachSignature target_bits_;        // the targets' own bits
  TensorList captured_;               // the result: one gradient per target
  std::unique_ptr<SlotMasks> masks_;  // made by the first node that stands for several ops (3)
};

// Grows `list` (empty, or already of size n) to n undefined gradients. emplace_back, not
// resize(): resize's out-of-line path value-initializes through a memset call, several times the
// cost of the one or two gradients a node receives. The node states' lists keep their memory
// between calls (Note [Reused node states]), so this seldom allocates. Inlined into its three
// callers (phases 1 and 4), with reserve() behind its own test: it runs for every node of even
// the smallest graph, where a call's overhead would show.
[[gnu::always_inline]] inline void grow_to(TensorList& list, size_t n) {
  if (list.capacity() < n) list.reserve(n);
  while (list.size() < n) list.emplace_back();
}

// 1.
void GraphTask::mark_targets() {
  const EdgeList& targets = request_.targets;
  const bool accumulate = request_.accumulate;
  grow_to(captured_, targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    const Node* fn = targets[i].function.get();
    if (fn == nullptr) continue;  // a leaf view with no edge of its own: never reached
    if (accumulate && fn->accumulates_into_leaf())
      nodes_[fn].target_runs = true;
    else
      nodes_[fn].captures.emplace_back(targets[i].input_nr, i);
    min_target_topo_nr_ = std::min(min_target_topo_nr_, fn->topological_nr());
    target_bits_ |= fn->own_signature();
  }
}

// 2.
void GraphTask::discover() {
  auto visit = [&](Node* node) {
    NodeState& state = nodes_[node];
    if (state.discovered) return;
    state.discovered = true;
    if (cut(*node)) return;
    ++counters().nodes_expanded;
    stack_.emplace_back(node, 0);
  };
  for (const Edge& root : request_.roots) {
    if (root.is_valid()) visit(root.function.get());
    while (!stack_.empty()) {
      Node* node = stack_.back().first;
      size_t& next = stack_.back().second;
      if (next == node->num_outputs()) {
        post_order_.push_back(node);
        stack_.pop_back();
        continue;
      }
      const Edge& edge = node->next_edge(next++);
      if (edge.is_valid()) visit(edge.function.get());  // may grow stack_: `next` is not used after
    }
  }
}

// Whether discovery leaves `node` unexpanded: it cannot reach any target. Only grad() and
// backward(inputs=...) have targets to cut towards.
bool GraphTask::cut(const Node& node) const {
  if (request_.targets.empty()) return false;
  const EngineOptions& o = request_.options;
  // Note [Topological number]
  if (o.prune_by_topo_nr && node.topological_nr() < min_target_topo_nr_) return true;
  // Note [Reachability signature]
  if (o.prune_by_reachability && !node.reach_signature().intersects(target_bits_)) return true;
  return false;
}

// 2, then: without allow_unused, each target must have been discovered.
void GraphTask::check_targets_reached() const {
  if (request_.allow_unused) return;
  for (size_t i = 0; i < request_.targets.size(); ++i) {
    const Node* fn = request_.targets[i].function.get();
    AG_CHECK(fn != nullptr && state_of(fn).discovered, "grad(): input ", i,
             " is not reachable from the outputs (it was not used to compute them); pass "
             "allow_unused to get an undefined gradient for it instead");
  }
}

// 3. Children come before their parents in post_order_, so theirs are settled first. A node runs
// iff one of its edges carries a used gradient, so each such edge is also a dependency of its
// child: both are settled in one pass.
void GraphTask::mark_runs() {
  if (request_.targets.empty()) return mark_runs_into_every_leaf();
  for (Node* node : post_order_) {
    bool runs = false;
    for (const Edge& edge : node->next_edges()) {
      if (!edge.is_valid()) continue;
      NodeState& child = nodes_[edge.function.get()];  // discovered: nothing is inserted
      if (!child.uses_gradient(edge.input_nr)) continue;
      runs = true;
      ++child.dependencies;
    }
    NodeState& state = nodes_[node];
    state.runs = runs || state.target_runs;
    if (runs && node->stands_for_several_ops()) {
      state.used_slots = mark_slots(*node, [&](const Edge& edge) { return uses_gradient(edge); });
    }
  }
  if (masks_ != nullptr) masks_->finish(*this);
}

// 3, for backward() without targets. An AccumulateGrad reads its leaf's requires_grad when it
// runs (Note [Accumulating into .grad]), so whether a gradient reaches a leaf that wants it is
// known only now: needs_input_grad must not count a leaf whose requires_grad was turned off
// after the graph was built. A node with hooks wants its gradients whatever lies behind it: its
// hooks see them, as in PyTorch (Note [Hooks]); but a tensor that retains grad there wants only
// its own slot's, and only while it still has this node as its history (gradients_hooks_want,
// engine/hooks.h). A gradient is wanted per slot of the node it goes to.
// (A leaf moved into the graph's interior requires grad: its AccumulateGrad runs, and raises.)
void GraphTask::mark_runs_into_every_leaf() {
  for (Node* node : post_order_) {
    NodeState& state = nodes_[node];
    if (node->accumulates_into_leaf()) {
      state.wanted =
          static_cast<AccumulateGrad*>(node)->variable_requires_grad() || node->has_hooks();
      state.runs = state.wanted;
      continue;
    }
    state.runs = true;
    const HookWants hooks =
        node->has_hooks() ? gradients_hooks_want(*node, &state.own_wanted_slots) : HookWants::kNone;
    bool behind = false;  // a gradient it sends on is wanted
    for (const Edge& edge : node->next_edges()) {
      if (!edge.is_valid()) continue;
      NodeState& child = nodes_[edge.function.get()];  // discovered: `state` stays valid
      behind = behind || child.wants_gradient(edge.input_nr);
      if (child.uses_gradient(edge.input_nr)) ++child.dependencies;
    }
    state.wanted = behind || hooks == HookWants::kAll;
    if (node->stands_for_several_ops()) {
      state.wanted_slots = mark_slots(*node, [&](const Edge& edge) {
        return state_of(edge.function.get()).wants_gradient(edge.input_nr);
      });
    }
    if (hooks == HookWants::kSlots && !state.wanted) {
      // Only the retaining tensors' slots.
      state.wanted = true;
      state.wanted_slots = &state.own_wanted_slots;
    } else if (hooks == HookWants::kSlots && state.wanted_slots != nullptr) {
      // The retaining slots as well as those the node's ops use.
      for (size_t i = 0; i < state.own_wanted_slots.size(); ++i)
        state.own_wanted_slots[i] = state.own_wanted_slots[i] || (*state.wanted_slots)[i];
      state.wanted_slots = &state.own_wanted_slots;
    }
  }
}

// 3. The slots of `node`, which stands for several ops, that count, given the next edges for
// which `edge_counts` holds (SlotMasks::mark).
template <typename Counts>
const std::vector<char>* GraphTask::mark_slots(const Node& node, Counts edge_counts) {
  std::vector<char> counts(node.num_outputs(), 0);
  for (size_t i = 0; i < counts.size(); ++i) {
    const Edge& edge = node.next_edge(i);
    counts[i] = edge.is_valid() && edge_counts(edge);
  }
  if (masks_ == nullptr) masks_ = node.new_slot_masks();
  return &masks_->mark(node, counts);
}

// 3, from SlotMasks::finish(). Parents come before their children there, so a child's state is
// read before it is changed, as mark_runs read it.
void GraphTask::cancel_run(const Node& node) {
  nodes_[&node].runs = false;
  for (const Edge& edge : node.next_edges()) {
    if (edge.is_valid() && uses_gradient(edge)) --nodes_[edge.function.get()].dependencies;
  }
}

// 4. How the gradients that meet at a node are summed, and in which order nodes run.

// Note [Summing gradients in place]
// Gradients that meet at a node are summed. Under create_graph the sum is the differentiable
// add, recorded (Note [The engine's ops]). Otherwise, as in PyTorch's InputBuffer, one of the two
// takes the other in place when nobody else holds it (held_only_here: no caller, saved value or
// view can see the write) and the shapes agree: no new tensor, and one pass over memory that is
// likely still in cache. IEEE addition commutes, so either way gives the bits of a + b.
// (can_sum_into, engine/accumulate_grad.h, is the rule; jit::Code's sums follow it too.)

// Note [Sums fused into formulas]
// Without create_graph, a gradient that meets one already waiting in a node's buffer costs two
// passes over memory: the formula writes a new tensor, then the sum above reads it back. Before
// it evaluates a formula that declares a fusion hook beside it (FormulaSpec::fuse: tanh's,
// sigmoid's, tanh_backward's, sigmoid_backward's grad_output's and scaled_product's,
// ops/elementwise.cc; select's, slice's and diagonal's,
// Note [View gradients into a waiting sum], ops/view_ops.cc), OpNode::apply asks the engine for the
// gradient waiting where that formula's result goes (sum_target): one that the in-place sum could
// write (can_sum_into's rule, held_only_here), with fuse_gradient_sums on, grad mode off and no
// hooks on the node (a post-hook is handed the formula's value). The
// hook then adds the formula's values into it in the same pass (ops/fused.cc) instead of the
// formula running, and the node returns no gradient there (undefined), as there is nothing left
// to add. The backend adds each block of the formula's values with the add kernel, as the
// separate sum would: the same bits (Backend::sum_into_binary). Under create_graph the sum is a
// recorded add, and nothing is offered. A compiled graph's run does the same for the sums it
// finds in its graph (Note [Releasing dead values], engine/jit/code.cc), through the op's
// OpForward::add_into, which calls the same kernels.

// Adds `grad` into slot `slot` of a node's buffer (Note [Summing gradients in place]).
void accumulate(TensorList& buffer, size_t slot, Tensor&& grad) {
  if (!grad.defined()) return;
  Tensor& sum = buffer[slot];
  if (!sum.defined()) {
    sum = std::move(grad);
  } else if (!values_unobserved()) {  // Note [Forward mode]: tangents ride on the ops
    sum = engine_ops::add(sum, grad);
  } else if (can_sum_into(sum, grad)) {
    engine_ops::add_in_place(sum, grad);
  } else if (can_sum_into(grad, sum)) {
    engine_ops::add_in_place(grad, sum);
    sum = std::move(grad);
  } else {
    sum = engine_ops::add(sum, grad);
  }
}

// The ready heap's order: the highest ready_key() on top (Note [Sequence number]). A function
// object rather than a function, so that the heap operations inline it instead of calling
// through a pointer.
struct RunsLater {
  bool operator()(const Node* a, const Node* b) const { return a->ready_key() < b->ready_key(); }
};

void GraphTask::enqueue(Node* node, NodeState& state) {
  if (state.queued) return;
  state.queued = true;
  ready_.push_back(node);
  std::push_heap(ready_.begin(), ready_.end(), RunsLater());
}

// 4, first: the roots' gradients, and the roots that are ready.
void GraphTask::seed_roots() {
  for (size_t i = 0; i < request_.roots.size(); ++i) {
    const Edge& root = request_.roots[i];
    if (!root.is_valid()) continue;
    NodeState& state = nodes_[root.function.get()];
    // A node that only captures takes every root gradient, as PyTorch's input buffer does: its
    // tensors' hooks see them (Note [Hooks]); only its captured slots are returned.
    if (!state.uses_gradient(root.input_nr) && (state.runs || state.captures.empty())) continue;
    grow_to(state.buffer, root.function->num_inputs());
    accumulate(state.buffer, root.input_nr, Tensor(request_.root_grads[i]));
  }
  for (const Edge& root : request_.roots) {
    if (!root.is_valid()) continue;
    NodeState& state = nodes_[root.function.get()];
    if (state.uses_any_gradient() && state.dependencies == 0) enqueue(root.function.get(), state);
  }
}

// Whether capture k of `state` may take its slot's gradient instead of a copy: the node does not
// run, so needs it no more, and no later capture reads the same slot (an input named twice).
// Moving spares a reference count update per target, and lets a handler that keeps the gradient
// (backward's .grad) see that nobody else holds it.
bool hands_over(const NodeState& state, size_t k) {
  if (state.runs) return false;
  const uint32_t slot = state.captures[k].first;
  return std::none_of(state.captures.begin() + static_cast<std::ptrdiff_t>(k) + 1,
                      state.captures.end(), [&](const auto& c) { return c.first == slot; });
}

void GraphTask::run_ready_nodes() {
  while (!ready_.empty()) {
    std::pop_heap(ready_.begin(), ready_.end(), RunsLater());
    Node* node = ready_.back();
    ready_.pop_back();
    NodeState& state = nodes_[node];
    // The buffer is handed to apply() in place and emptied after it, so its memory stays with
    // the state for the next call (Note [Reused node states]). No node is added to nodes_ from
    // here on, so `state` stays valid.
    TensorList& grads = state.buffer;
    // resize, not grow_to(): here the list nearly always has its size already, which resize()
    // checks inline, where grow_to()'s loop costs every call of even a tiny graph.
    grads.resize(node->num_inputs());
    // Note [Hooks]: a node that only captures runs its tensors' hooks before the capture; one
    // that runs, in call(), after it.
    if (!state.runs && node->has_hooks()) call_tensor_hooks(*node, grads);
    for (size_t k = 0; k < state.captures.size(); ++k) {
      const auto [slot, target] = state.captures[k];
      captured_[target] = hands_over(state, k) ? std::move(grads[slot]) : Tensor(grads[slot]);
    }
    if (state.runs) {
      TensorList outputs = call(*node, std::move(grads));
      send(*node, outputs);
      // OpNode::apply() returns its results in the list it was handed: keep that memory.
      if (outputs.capacity() > grads.capacity()) grads = std::move(outputs);
    }
    grads.clear();
  }
}

TensorList GraphTask::call_node(Node& node, TensorList&& grads) {
  if (node.has_hooks()) {  // Note [Hooks]
    return call_with_hooks(node, std::move(grads),
                           [&](TensorList&& hooked) { return apply(node, std::move(hooked)); });
  }
  return apply(node, std::move(grads));
}

TensorList GraphTask::call(Node& node, TensorList&& grads) {
  if (anomaly_mode_enabled()) {  // Note [Anomaly mode]
    return call_watching_anomalies(node, [&] { return call_node(node, std::move(grads)); });
  }
  return call_node(node, std::move(grads));
}

TensorList GraphTask::apply(Node& node, TensorList&& grads) {
  bool any_defined = false;
  for (const Tensor& g : grads) any_defined = any_defined || g.defined();
  TensorList outputs;
  if (any_defined) {
    Counters& c = counters();
    ++c.nodes_executed;
    if (c.trace_executed) c.executed.push_back(node.sequence_nr());
    outputs = node.apply(std::move(grads), Call(node, this, request_.options));
    AG_CHECK(outputs.size() == node.num_outputs(), "Function '", node.name(), "' returned ",
             outputs.size(), " gradients but expected ", node.num_outputs(),
             " (one per forward input)");
  } else {
    // Nothing flowed in (e.g. a custom Function returned no gradient): nothing flows out.
    outputs.resize(node.num_outputs());
  }
  if (!request_.keep_graph) node.release_saved();
  return outputs;
}

NodeState* GraphTask::receiver(const Node& from, size_t i) {
  const Edge& edge = from.next_edge(i);
  if (!edge.is_valid()) return nullptr;
  NodeState& child = nodes_[edge.function.get()];
  return child.uses_gradient(edge.input_nr) ? &child : nullptr;
}

void GraphTask::add_to_buffer(const Node& from, size_t i, NodeState& child, Tensor&& grad) {
  const Edge& edge = from.next_edge(i);
  if (grad.defined()) {
    const TensorMeta& meta = edge.function->input_metadata()[edge.input_nr];
    AG_CHECK(
        grad.shape() == meta.shape && grad.dtype() == meta.dtype && grad.device() == meta.device,
        "Function '", from.name(), "' returned an invalid gradient at index ", i, ": got ",
        to_string(grad.dtype()), to_string(grad.shape()), " on ", to_string(grad.device()),
        " but expected ", to_string(meta.dtype), to_string(meta.shape), " on ",
        to_string(meta.device));
  }
  if (child.buffer.empty()) grow_to(child.buffer, edge.function->num_inputs());
  accumulate(child.buffer, edge.input_nr, std::move(grad));
}

// Moves the gradients in `outputs` that are used along their edges.
void GraphTask::send(const Node& from, TensorList& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    NodeState* child = receiver(from, i);
    if (child == nullptr) continue;
    add_to_buffer(from, i, *child, std::move(outputs[i]));
    if (--child->dependencies == 0) enqueue(from.next_edge(i).function.get(), *child);
  }
}

Tensor* GraphTask::sum_target(const Node& from, size_t i) {
  // A trace records ops: a sum made inside a formula's kernel would be missing from it. Anomaly
  // mode checks each formula's value (Note [Anomaly mode]).
  if (engine_ops::tracing() || anomaly_mode_checks_nan()) return nullptr;
  // A post-hook is handed what the formula computed (grad_inputs), so a node with hooks gets
  // nothing to fuse into.
  if (from.has_hooks()) return nullptr;
  NodeState* child = receiver(from, i);
  if (child == nullptr || child->buffer.empty()) return nullptr;
  Tensor& sum = child->buffer[from.next_edge(i).input_nr];
  return can_add_into(sum, request_.options) ? &sum : nullptr;
}

// Call::send_now: the buffer now, the dependency when apply() returns (send() above).
void GraphTask::send_now(const Node& from, size_t i, Tensor&& grad) {
  if (NodeState* child = receiver(from, i)) add_to_buffer(from, i, *child, std::move(grad));
}

}  // namespace

// The entry points: phases 1 to 3 (plan_execution, for describe_graph) or all four (execute).

ExecutionPlan plan_execution(const ExecuteRequest& request) {
  ScratchLease<Scratch> scratch;
  return GraphTask(request, *scratch).plan();
}

TensorList execute(const ExecuteRequest& request) {
  // A trace of forward ops only would miss the formulas' ops that a backward runs; a trace that
  // records gradients takes them as the program's own (Note [Tracing hook], ops/trace_hook.h).
  AG_CHECK(!engine_ops::tracing_forward_only(),
           "backward()/grad() cannot run while ops are traced: trace the forward, then "
           "differentiate the traced graph's results (or trace with TraceMode::kWithGradients)");
  GradModeGuard grad_mode(request.create_graph);
  // The call's options are in force for the ops its formulas run too (Note [Engine options]).
  OptionsGuard options(request.options);
  ScratchLease<Scratch> scratch;
  return GraphTask(request, *scratch).run();
}

}  // namespace ag
