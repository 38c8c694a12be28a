#include "engine/engine.h"

#include <algorithm>
#include <memory>

#include "engine/call.h"
#include "engine/counters.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/node_map.h"
#include "ops/ops.h"

namespace ag {

namespace {

// Per-call state of one node. It lives in the graph task, never in the node (Note [Per-call view]).
struct NodeState {
  bool discovered = false;
  bool needed = false;  // apply() runs: some child receives a gradient
  bool queued = false;
  int dependencies = 0;  // parents that will still send a gradient
  TensorList buffer;     // gradients received so far, one slot per node input
  std::vector<std::pair<uint32_t, size_t>> captures;  // (input slot, target index)

  // Whether the gradient arriving in input slot `slot` is used: by apply(), or as a capture.
  // Per slot, not per node: a node's other outputs may lie on no path to a target.
  bool receives_gradient(uint32_t slot) const {
    if (needed) return true;
    for (const auto& capture : captures) {
      if (capture.first == slot) return true;
    }
    return false;
  }
  bool receives_any_gradient() const { return needed || !captures.empty(); }
};

// The containers one backward call needs, kept per thread and reused by the next call: on small
// graphs, allocating them afresh was a large part of the engine's overhead. A backward started
// from inside a node's apply() (a custom Function calling grad()) takes a second set.
struct Scratch {
  NodeMap<NodeState> nodes;
  std::vector<std::pair<Node*, size_t>> stack;  // discovery: (node, next child to look at)
  std::vector<Node*> ready;                     // a heap ordered by sequence_nr
};

class ScratchLease {
 public:
  ScratchLease() {
    if (pool().empty()) {
      scratch_ = std::make_unique<Scratch>();
    } else {
      scratch_ = std::move(pool().back());
      pool().pop_back();
    }
  }
  ~ScratchLease() {
    scratch_->nodes.clear();
    scratch_->stack.clear();
    scratch_->ready.clear();
    pool().push_back(std::move(scratch_));
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  Scratch& operator*() { return *scratch_; }

 private:
  static std::vector<std::unique_ptr<Scratch>>& pool() {
    thread_local std::vector<std::unique_ptr<Scratch>> free_list;
    return free_list;
  }
  std::unique_ptr<Scratch> scratch_;
};

class GraphTask final : public ExecPlan {
 public:
  GraphTask(const ExecuteRequest& request, Scratch& scratch)
      : request_(request), nodes_(scratch.nodes), stack_(scratch.stack), ready_(scratch.ready) {}

  TensorList run();

  bool receives_gradient(const Edge& edge) const override {
    const NodeState* state = nodes_.find(edge.function.get());
    return state != nullptr && state->receives_gradient(edge.input_nr);
  }

 private:
  void mark_targets();
  void discover();
  bool skip_expansion(const Node& node) const;
  void count_dependencies();
  void seed_roots();
  void execute_ready_nodes();
  TensorList call_node(Node& node, TensorList&& grads);
  void send(const Node& from, TensorList&& outputs);
  void enqueue(Node* node, NodeState& state);

  const ExecuteRequest& request_;
  NodeMap<NodeState>& nodes_;
  std::vector<std::pair<Node*, size_t>>& stack_;
  std::vector<Node*>& ready_;
  uint64_t min_target_topo_nr_ = 0;
  ReachSignature target_bits_;  // own bits of the targets
  TensorList captured_;
  static bool by_sequence_nr(const Node* a, const Node* b) {
    return a->sequence_nr() < b->sequence_nr();
  }
};

TensorList GraphTask::run() {
  mark_targets();
  discover();
  count_dependencies();
  seed_roots();
  execute_ready_nodes();
  return std::move(captured_);
}

void GraphTask::mark_targets() {
  const EdgeList& targets = request_.targets;
  captured_.resize(targets.size());
  min_target_topo_nr_ = UINT64_MAX;
  for (size_t i = 0; i < targets.size(); ++i) {
    const Node* fn = targets[i].function.get();
    nodes_[fn].captures.emplace_back(targets[i].input_nr, i);
    min_target_topo_nr_ = std::min(min_target_topo_nr_, fn->topological_nr());
    target_bits_ |= fn->own_signature();
  }
}

// Discovery cuts (only when specific inputs are requested): a node that cannot reach any target
// is recorded but its children are never visited.
bool GraphTask::skip_expansion(const Node& node) const {
  if (request_.targets.empty()) return false;
  const EngineOptions& o = request_.options;
  // Note [Topological number]
  if (o.prune_by_topo_nr && node.topological_nr() < min_target_topo_nr_) return true;
  // Note [Reachability signature]
  if (o.prune_by_reachability && !node.reach_signature().intersects(target_bits_)) return true;
  return false;
}

// Phase 1: depth-first traversal from the roots. In post-order each node learns whether it is
// needed: with no targets every node is; otherwise a node is needed iff one of its children
// receives a gradient (is needed or is a target), i.e. iff it lies on a root-to-target path.
void GraphTask::discover() {
  const bool all_needed = request_.targets.empty();
  auto& stack = stack_;
  auto visit = [&](Node* node) {
    NodeState& state = nodes_[node];
    if (state.discovered) return;
    state.discovered = true;
    if (skip_expansion(*node)) return;
    ++counters().nodes_discovered;
    stack.emplace_back(node, 0);
  };
  for (const Edge& root : request_.roots) {
    if (root.is_valid()) visit(root.function.get());
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->num_outputs()) {
        const Edge& edge = node->next_edge(next++);
        if (edge.is_valid()) visit(edge.function.get());
        continue;
      }
      NodeState& state = nodes_[node];
      state.needed = all_needed;
      for (const Edge& edge : node->next_edges()) {
        if (state.needed) break;
        state.needed =
            edge.is_valid() && nodes_[edge.function.get()].receives_gradient(edge.input_nr);
      }
      stack.pop_back();
    }
  }
  if (request_.allow_unused) return;
  for (size_t i = 0; i < request_.targets.size(); ++i) {
    AG_CHECK(nodes_[request_.targets[i].function.get()].discovered, "grad(): input ", i,
             " is not reachable from the outputs (it was not used to compute them); pass "
             "allow_unused=true to get an undefined gradient for it instead");
  }
}

// Phase 2: each receiving node waits for one gradient per edge from a needed parent.
void GraphTask::count_dependencies() {
  for (auto& [node, state] : nodes_.entries()) {
    if (!state.needed) continue;
    for (const Edge& edge : node->next_edges()) {
      if (!edge.is_valid()) continue;
      NodeState& child = nodes_[edge.function.get()];
      if (child.receives_gradient(edge.input_nr)) ++child.dependencies;
    }
  }
}

void accumulate(TensorList& buffer, size_t slot, Tensor&& grad) {
  if (!grad.defined()) return;
  if (!buffer[slot].defined()) {
    buffer[slot] = std::move(grad);
  } else {
    buffer[slot] = ops::add(buffer[slot], grad);
  }
}

void GraphTask::enqueue(Node* node, NodeState& state) {
  if (state.queued) return;
  state.queued = true;
  ready_.push_back(node);
  std::push_heap(ready_.begin(), ready_.end(), by_sequence_nr);
}

void GraphTask::seed_roots() {
  for (size_t i = 0; i < request_.roots.size(); ++i) {
    const Edge& root = request_.roots[i];
    if (!root.is_valid()) continue;
    NodeState& state = nodes_[root.function.get()];
    if (!state.receives_gradient(root.input_nr)) continue;
    state.buffer.resize(root.function->num_inputs());
    accumulate(state.buffer, root.input_nr, Tensor(request_.root_grads[i]));
  }
  for (const Edge& root : request_.roots) {
    if (!root.is_valid()) continue;
    NodeState& state = nodes_[root.function.get()];
    if (state.receives_any_gradient() && state.dependencies == 0) {
      enqueue(root.function.get(), state);
    }
  }
}

// Phase 3: run nodes in decreasing sequence_nr as their last gradient arrives.
void GraphTask::execute_ready_nodes() {
  while (!ready_.empty()) {
    std::pop_heap(ready_.begin(), ready_.end(), by_sequence_nr);
    Node* node = ready_.back();
    ready_.pop_back();
    NodeState& state = nodes_[node];
    TensorList grads = std::move(state.buffer);
    grads.resize(node->num_inputs());
    for (const auto& [slot, target] : state.captures) captured_[target] = grads[slot];
    if (!state.needed) continue;
    send(*node, call_node(*node, std::move(grads)));
  }
}

TensorList GraphTask::call_node(Node& node, TensorList&& grads) {
  bool any_defined = false;
  for (const Tensor& g : grads) any_defined = any_defined || g.defined();
  // Nothing flowed in (e.g. a custom Function returned no gradient): nothing flows out, and the
  // node's saved values are freed like those of every node this call ran.
  if (!any_defined) {
    if (!request_.keep_graph) node.release_saved();
    return TensorList(node.num_outputs());
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].defined()) continue;
    const TensorMeta& meta = node.input_metadata()[i];
    grads[i] = ops::zeros(meta.shape, meta.dtype, meta.device);
  }
  Counters& c = counters();
  ++c.nodes_executed;
  if (c.trace_executed) c.executed.push_back(node.sequence_nr());
  Call call(node, this, request_.create_graph, request_.options);
  TensorList outputs = node.apply(std::move(grads), call);
  if (!request_.keep_graph) node.release_saved();
  AG_CHECK(outputs.size() == node.num_outputs(), "Function '", node.name(), "' returned ",
           outputs.size(), " gradients but expected ", node.num_outputs(),
           " (one per forward input)");
  return outputs;
}

void GraphTask::send(const Node& from, TensorList&& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Edge& edge = from.next_edge(i);
    if (!edge.is_valid()) continue;
    NodeState& child = nodes_[edge.function.get()];
    if (!child.receives_gradient(edge.input_nr)) continue;
    Tensor& grad = outputs[i];
    if (grad.defined()) {
      const TensorMeta& meta = edge.function->input_metadata()[edge.input_nr];
      AG_CHECK(
          grad.shape() == meta.shape && grad.dtype() == meta.dtype && grad.device() == meta.device,
          "Function '", from.name(), "' returned an invalid gradient at index ", i, ": got ",
          to_string(grad.dtype()), to_string(grad.shape()), " on ", to_string(grad.device()),
          " but expected ", to_string(meta.dtype), to_string(meta.shape), " on ",
          to_string(meta.device));
    }
    if (child.buffer.empty()) child.buffer.resize(edge.function->num_inputs());
    accumulate(child.buffer, edge.input_nr, std::move(grad));
    if (--child.dependencies == 0) enqueue(edge.function.get(), child);
  }
}

}  // namespace

TensorList execute(const ExecuteRequest& request) {
  GradModeGuard grad_mode(request.create_graph);
  ScratchLease scratch;
  return GraphTask(request, *scratch).run();
}

}  // namespace ag
