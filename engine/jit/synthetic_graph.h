// Deterministic graphs of a requested size, for the pass's benchmark and its
// operation-count tests.
#pragma once

#include <cstddef>
#include <memory>

#include "engine/jit/ir.h"

namespace ag::jit {

// A chain of blocks over 3x3 tensors. Each block is differentiable work with
// views (transpose, reshape) on a running state; every few blocks the state is
// also written in place (aten::add_), printed (a side effect) or passed through
// a list (wildcard aliasing). The graph has about `num_nodes` nodes and runs
// under the executor with two 3x3 inputs.
std::unique_ptr<Graph> makeLayeredGraph(size_t num_nodes);

}  // namespace ag::jit
