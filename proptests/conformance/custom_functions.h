#pragma once

// The custom Functions that conformance programs call (program.h's CustomKind). torch_runtime.py
// defines the same three with the same formulas, op for op, so results can agree bit for bit.
// Each backward computes only the gradients its per-call needs_input_grad asks for, and logs
// what it saw: the records compare those flags with the ideal (input i is needed iff it reaches
// a tensor the call requested).

#include <vector>

#include "engine/tensor.h"
#include "proptests/conformance/program.h"

namespace ag::proptests {

struct NeedsEvent {
  int stmt;  // the statement whose apply() created the node
  std::vector<bool> needs;
};

// Backward calls since the last clear, on this thread.
std::vector<NeedsEvent>& needs_log();

// Applies the custom Function; `stmt` identifies the node in needs_log().
TensorList apply_custom(CustomKind kind, const TensorList& args, int stmt);

}  // namespace ag::proptests
