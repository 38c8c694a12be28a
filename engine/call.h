#pragma once

#include <cstddef>

#include "engine/node.h"
#include "engine/options.h"

namespace ag {

// What one backward call will run: which edges carry a gradient that is used. Implemented by the
// engine's graph task; read-only while nodes execute.
class ExecPlan {
 public:
  virtual ~ExecPlan() = default;
  // Whether the gradient sent along `edge` (into one input slot of its node) is used.
  virtual bool gradient_used(const Edge& edge) const = 0;
};

// Note [Per-call view]
// A node learns what *this* backward call needs through the Call it is handed, never through
// state stored on the node. PyTorch answers needs_input_grad from a thread-local graph task; here
// it is an explicit argument. Because nothing per-call is written into nodes, several threads may
// run grad() over one shared graph for different inputs at the same time.
class Call {
 public:
  Call(const Node& node, const ExecPlan* plan, bool create_graph, const EngineOptions& options)
      : node_(node), plan_(plan), create_graph_(create_graph), options_(options) {}

  // True iff this call needs the gradient for the node's i-th next edge. With
  // per_call_needs_input_grad off it degrades to "that input requires grad" (the old behaviour).
  bool needs_input_grad(size_t i) const {
    const Edge& e = node_.next_edge(i);
    if (!e.is_valid()) return false;
    if (!options_.per_call_needs_input_grad || plan_ == nullptr) return true;
    return plan_->gradient_used(e);
  }
  bool create_graph() const { return create_graph_; }
  const EngineOptions& options() const { return options_; }

 private:
  const Node& node_;
  const ExecPlan* plan_;
  bool create_graph_;
  const EngineOptions& options_;
};

}  // namespace ag
