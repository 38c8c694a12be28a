#include "paper/workloads/unrolled_loop.h"

#include <cstdint>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "ops/ops.h"
#include "paper/workloads/timing.h"

namespace ag::paper {

UnrolledLoopRun run_unrolled_loop(const UnrolledLoopConfig& c, const EngineOptions& options) {
  OptionsGuard guard(options);
  Tensor x = ops::uniform({c.batch, c.features}, -1, 1, 11);
  std::vector<int64_t> targets(c.batch);
  for (int i = 0; i < c.batch; ++i) targets[i] = (i * 7 + 3) % c.classes;
  Tensor w = ops::uniform({c.features, c.classes}, -0.1, 0.1, 12);
  w.set_requires_grad(true);
  Tensor b = ops::zeros({c.classes});
  b.set_requires_grad(true);

  UnrolledLoopRun run;
  const int64_t discovered_before = counters().nodes_expanded;
  auto block_start = Clock::now();
  Tensor loss;
  for (int step = 1; step <= c.steps; ++step) {
    loss = ops::cross_entropy(ops::add(ops::matmul(x, w), b), targets);
    TensorList g = grad({loss}, {w, b}, GradArgs().create_graph());
    w = w - g[0] * c.lr;
    b = b - g[1] * c.lr;
    if (step % c.block == 0) {
      run.block_seconds.push_back(seconds_since(block_start));
      block_start = Clock::now();
    }
  }
  run.final_loss = loss.item();
  run.nodes_expanded = counters().nodes_expanded - discovered_before;
  return run;
}

}  // namespace ag::paper
