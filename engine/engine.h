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
  bool allow_unused = false;  // a target no root reaches: undefined result instead of an error
  bool keep_graph = false;
  bool create_graph = false;
  EngineOptions options;
};

// Runs one backward pass (see engine.cc for the three phases). Returns, for each target, the
// gradient that reached it (undefined if none did). With no targets, leaves accumulate into .grad
// and the result is empty.
TensorList execute(const ExecuteRequest& request);

}  // namespace ag
