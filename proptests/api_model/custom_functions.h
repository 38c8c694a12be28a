#pragma once

// Two custom Functions for the API model, whose backward records the needs_input_grad it sees:
//   CMul(p, q) = p * q                       (one output)
//   Two(p, q)  = (p * q, p + q)              (two outputs: a multi-output node)
// Both save p and q and unpack them whenever backward runs (like ctx.saved_tensors in PyTorch).
// Each node is tagged with the model's node number (next_custom_tag) so the runner can match
// what the engine ran against what the model expects.

#include <map>
#include <vector>

#include "engine/tensor.h"

namespace ag::proptests {

// The tag the next custom forward records.
void set_next_custom_tag(int tag);

// needs_input_grad seen by each custom backward since the last clear, by tag.
std::map<int, std::vector<bool>>& custom_needs_log();

Tensor custom_mul(const Tensor& p, const Tensor& q);
TensorList custom_two(const Tensor& p, const Tensor& q);

}  // namespace ag::proptests
