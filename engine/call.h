#pragma once

#include <cstddef>

#include "engine/hooks.h"
#include "engine/node.h"
#include "engine/options.h"

namespace ag {

// What one backward call will run: which edges carry a gradient that is used. Implemented by the
// engine's graph task; read-only while nodes execute, but for send_now().
class ExecPlan {
 public:
  virtual ~ExecPlan() = default;
  // Whether the gradient sent along `edge` (into one input slot of its node) is used.
  virtual bool gradient_used(const Edge& edge) const = 0;
  // Whether `edge` is on a path the call executes (PyTorch's exec_info): a node runs iff one of
  // its edges is. With targets: the node it leads to runs, or captures the gradient there.
  // Without targets every node runs, so every edge is.
  virtual bool on_executed_path(const Edge& edge) const = 0;
  // Adds `grad`, the gradient for the `i`-th next edge of `from` (the node being applied), into
  // the buffer of the node that edge leads to, now (Call::send_now).
  virtual void send_now(const Node& from, size_t i, Tensor&& grad) = 0;
  // The gradient already waiting in the buffer that the `i`-th next edge of `from` leads to, when
  // the formula for that edge may add its result into it in place (Note [Sums fused into
  // formulas], engine/engine.cc); else null.
  virtual Tensor* sum_target(const Node& from, size_t i) = 0;
};

// Note [Per-call view]
// A node learns what *this* backward call needs through the Call it is handed, never through
// state stored on the node. PyTorch answers needs_input_grad from a thread-local graph task; here
// it is an explicit argument. Because nothing per-call is written into nodes, several threads may
// run grad() over one shared graph for different inputs at the same time.
class Call {
 public:
  Call(const Node& node, ExecPlan* plan, const EngineOptions& options)
      : node_(node), plan_(plan), options_(options) {}

  // True iff this call needs the gradient for the node's i-th next edge. With
  // per_call_needs_input_grad off it degrades to "that input requires grad" (the old behaviour).
  bool needs_input_grad(size_t i) const {
    const Edge& e = node_.next_edge(i);
    if (!e.is_valid()) return false;
    if (!options_.per_call_needs_input_grad || plan_ == nullptr) return true;
    // Note [Post-hooks see every executed gradient], engine/hooks.h
    if (computes_every_executed_gradient(node_)) return plan_->on_executed_path(e);
    return plan_->gradient_used(e);
  }
  // True iff the i-th next edge is on a path this call executes, whatever the options. A node
  // that stands for several ops (Note [Nodes that stand for several ops], engine/node.h) runs an
  // op's formulas only where that op's own node would have run at all, which this decides.
  bool on_executed_path(size_t i) const {
    const Edge& e = node_.next_edge(i);
    return e.is_valid() && (plan_ == nullptr || plan_->on_executed_path(e));
  }
  // Sends the gradient for the i-th next edge before apply() returns: the engine adds it into the
  // receiving node's buffer at once, as it adds apply()'s results after it returns (apply() then
  // returns an undefined gradient at i). For a node that stands for several ops, so that the sums
  // a create_graph call records are made in the order those ops' own nodes would make them (Note
  // [Contributions in eager order], engine/jit/differentiate.h). Returns false, sending nothing,
  // for a Call made outside a backward pass.
  bool send_now(size_t i, Tensor grad) const {
    if (plan_ == nullptr) return false;
    plan_->send_now(node_, i, std::move(grad));
    return true;
  }
  // Where the formula for the i-th next edge may add its result in place instead of returning a
  // gradient for the engine to add (Note [Sums fused into formulas], engine/engine.cc): the
  // gradient already waiting there, or null (always outside a backward pass).
  Tensor* sum_target(size_t i) const {
    return plan_ == nullptr ? nullptr : plan_->sum_target(node_, i);
  }

 private:
  const Node& node_;
  ExecPlan* plan_;
  const EngineOptions& options_;
};

}  // namespace ag
