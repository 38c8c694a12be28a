// Issue 45's workloads: hooks, saved-tensor hooks and activation checkpointing.
//
// A residual MLP (engine/tests/checkpoint_test.cc's): `layers` blocks
//   h = h + tanh(dropout(tanh(h W1), p, seed_i) W2),   W1 [width, 4 width], W2 [4 width, width]
// on x [batch, width], which does not require grad; one step is the forward and the gradients of
// sum(h * h) w.r.t. every W, each block run plainly or under ag::checkpoint (Note [Activation
// checkpointing]).
//
// The hooked chain of multiplications is tiny_graph.h's scalar chain (scalar_chain_grad with
// identity_hooks).
//
// Pack calls: how many values one forward hands to a counting saved-tensor hook (pack counts
// them and returns the value; unpack returns it), and their bytes, under the options in force.
// The guards (Note [Guarded saves]) decide what is saved before pack runs.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/options.h"
#include "engine/tensor.h"

namespace ag::paper {

struct ResidualMlpConfig {
  int layers = 20;
  int batch = 256;
  int width = 256;
  double p = 0.25;  // dropout
};

struct ResidualBlock {
  Tensor w1, w2;  // leaves that require grad
  uint64_t seed = 0;
  double p = 0.25;  // dropout
  TensorList operator()(const TensorList& in) const;
};

struct ResidualMlp {
  std::vector<ResidualBlock> blocks;
  Tensor x;                    // the input, not requiring grad
  TensorList weights() const;  // w1, w2 of each block, in order
};
ResidualMlp make_residual_mlp(const ResidualMlpConfig& config);

// sum(h * h) of the stack on mlp.x, each block checkpointed or not.
Tensor residual_mlp_loss(const ResidualMlp& mlp, bool checkpointed);
// The gradients of that loss w.r.t. every weight.
TensorList residual_mlp_grads(const ResidualMlp& mlp, bool checkpointed);
// One step; returns a checksum of the gradients (their first elements, summed).
double residual_mlp_step(const ResidualMlp& mlp, bool checkpointed);
// The allocator's peak bytes during one step, above the live bytes before it.
int64_t residual_mlp_peak_bytes(const ResidualMlp& mlp, bool checkpointed);

struct PackCount {
  int64_t calls = 0;
  int64_t bytes = 0;  // numel x element size of every packed value, each pack counted
};
// Runs forward() under a counting SavedTensorsHooks scope and `options`.
PackCount count_packs(const EngineOptions& options, const std::function<void()>& forward);

}  // namespace ag::paper
