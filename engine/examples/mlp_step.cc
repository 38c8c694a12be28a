// A two-layer MLP trained with plain SGD: the engine's whole user-facing loop in one page.
// Run it with `bazel run //engine/examples:mlp_step`, then change it: the width, the loss, the
// learning rate, or print describe_graph(loss) to see the graph one step builds.
#include <cstdio>
#include <vector>

#include "engine/autograd.h"
#include "engine/grad_mode.h"
#include "ops/ops.h"

using namespace ag;

int main() {
  constexpr int64_t kBatch = 64, kIn = 4, kHidden = 16, kClasses = 3;
  constexpr double kLearningRate = 0.5;

  // A fixed, learnable dataset: the class is which of the first three features is largest.
  const Tensor x = ops::uniform({kBatch, kIn}, -1, 1, /*seed=*/1);
  const std::vector<double> features = x.to_vector();
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < kBatch; ++i) {
    const double* f = &features[i * kIn];
    labels.push_back(f[0] > f[1] ? (f[0] > f[2] ? 0 : 2) : (f[1] > f[2] ? 1 : 2));
  }

  // Parameters are leaves that require grad.
  Tensor w1 = ops::uniform({kHidden, kIn}, -0.5, 0.5, 2);
  Tensor b1 = ops::zeros({kHidden});
  Tensor w2 = ops::uniform({kClasses, kHidden}, -0.5, 0.5, 3);
  Tensor b2 = ops::zeros({kClasses});
  TensorList params = {w1, b1, w2, b2};
  for (Tensor& p : params) p.set_requires_grad(true);

  for (int step = 0; step <= 200; ++step) {
    // Forward: every op records its node, so `loss` carries the graph.
    const Tensor hidden = ops::relu(ops::linear(x, w1, b1));
    const Tensor loss = ops::cross_entropy(ops::linear(hidden, w2, b2), labels);

    // Backward: accumulates d loss / d p into each p.grad().
    backward(loss);

    // SGD step, in place and without recording (like torch.no_grad()), then clear the grads.
    {
      NoGradGuard no_grad;
      for (Tensor& p : params) {
        ops::add_(p, p.grad() * -kLearningRate);
        p.set_grad(Tensor());
      }
    }
    if (step % 40 == 0) std::printf("step %3d  loss %.4f\n", step, loss.item());
  }
  return 0;
}
