// Seed 000's unrolled loop (issue 12635): differentiable SGD on a linear classifier. Each step
//   loss = cross_entropy(X @ W + b, targets);  gW, gb = grad(loss, {W, b}, create_graph=true)
//   W = W - lr * gW;  b = b - lr * gb
// differentiates w.r.t. the *current* parameters, which are interior nodes of an ever-growing
// graph. Without the topological-number cut, discovery walks the whole history every step, so
// time per step grows linearly; with it, each step's discovery stops at the current step.
#pragma once

#include <vector>

#include "engine/options.h"

namespace ag::paper {

struct UnrolledLoopConfig {
  int features = 32;
  int classes = 3;
  int batch = 300;
  int steps = 2000;
  int block = 100;  // steps per reported time
  double lr = 1e-3;
};

struct UnrolledLoopRun {
  std::vector<double> block_seconds;  // one entry per `block` steps
  double final_loss = 0;
  long long nodes_expanded = 0;  // over the whole run (engine counters)
};

UnrolledLoopRun run_unrolled_loop(const UnrolledLoopConfig& config, const EngineOptions& options);

}  // namespace ag::paper
