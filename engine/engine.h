#pragma once

#include <vector>

#include "engine/node.h"
#include "engine/options.h"

namespace ag {

struct ExecuteRequest {
  EdgeList roots;         // gradient_edge() of each output
  TensorList root_grads;  // one per root, already validated
  // Empty: backward() into every leaf. Else capture the gradient arriving at each of these
  // (slot input_nr of the edge's function) and run only what leads to them.
  EdgeList targets;
  // backward(inputs=...): a target that is a leaf's AccumulateGrad runs it (so its .grad is
  // accumulated, in PyTorch's order: as soon as the leaf's gradient is complete) instead of
  // capturing; the other targets retain grad (Note [Hooks], engine/hooks.h).
  bool accumulate = false;
  bool allow_unused = false;  // a target no root reaches: undefined result instead of an error
  bool keep_graph = false;
  bool create_graph = false;
  EngineOptions options;

  // Back to a default request, keeping the vectors' memory: grad() and backward() take theirs
  // from a per-thread ScratchLease (engine/scratch_pool.h), so that a call allocates none.
  void clear() {
    roots.clear();
    root_grads.clear();
    targets.clear();
    allow_unused = accumulate = keep_graph = create_graph = false;
    options = EngineOptions();
  }
};

// Runs one backward pass (Note [The backward pass] in engine.cc). Returns, for each target, the
// gradient that reached it (undefined if none did). With no targets, leaves accumulate into .grad
// and the result is empty.
TensorList execute(const ExecuteRequest& request);

// What execute() would do with `request`, without running anything (phases 1 to 3): the nodes it
// would expand and the nodes whose apply() it would call. root_grads may be empty.
struct ExecutionPlan {
  std::vector<const Node*> expanded;
  std::vector<const Node*> runs;
  // The edges out of running nodes whose gradient the call uses (what per-call needs_input_grad
  // answers true for; Note [Per-call view]), as (node, index of the edge).
  std::vector<std::pair<const Node*, size_t>> used_edges;
};
ExecutionPlan plan_execution(const ExecuteRequest& request);

}  // namespace ag
