// The CUDA tests' own hessian workload: a small MLP and the step of seed 001's hessian benchmark
// (y_xx by two nested grad(create_graph), then optionally y_xx.sum().backward() into the
// weights), built the same way on any device so that the tests can compare a GPU's results with
// the CPU's. The benchmark itself runs paper/workloads/hessian.h's, at full size
// (paper/hessian_bench.cc); the tests need only a step small enough to run in a moment.
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/autograd.h"
#include "engine/device.h"
#include "engine/tensor.h"
#include "ops/ops.h"

namespace ag::cuda::testing {

// Input 16, `layers` hidden Linear layers of width `hidden` (with ReLU or tanh), output 1.
struct HessianMlp {
  TensorList weights, biases;  // require grad
  bool tanh = false;

  Tensor forward(const Tensor& x) const {
    Tensor h = x;
    for (size_t i = 0; i < weights.size(); ++i) {
      h = ops::linear(h, weights[i], biases[i]);
      if (i + 1 < weights.size()) h = tanh ? ops::tanh(h) : ops::relu(h);
    }
    return h;
  }
};

struct HessianSetup {
  HessianMlp mlp;
  Tensor x;  // [batch, 16], requires grad
};

// The same values on each device: uniform in PyTorch's Linear init range, from fixed seeds.
inline HessianSetup small_hessian(Device device, bool tanh, int batch = 64, int hidden = 64,
                                  int layers = 3) {
  constexpr int kInput = 16;
  HessianSetup s;
  s.mlp.tanh = tanh;
  int in = kInput;
  uint64_t seed = 100;
  for (int l = 0; l <= layers; ++l) {
    const int out = l < layers ? hidden : 1;
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    Tensor w = ops::uniform({out, in}, -bound, bound, seed++, DType::kFloat32, device);
    Tensor b = ops::uniform({out}, -bound, bound, seed++, DType::kFloat32, device);
    w.set_requires_grad(true);
    b.set_requires_grad(true);
    s.mlp.weights.push_back(w);
    s.mlp.biases.push_back(b);
    in = out;
  }
  s.x = ops::uniform({batch, kInput}, -1, 1, 7, DType::kFloat32, device);
  s.x.set_requires_grad(true);
  return s;
}

// y_xx of y = mlp(x); with `final_backward`, then y_xx.sum().backward() into the weights and
// biases, whose .grad it clears first. The device work of one step, y_xx returned unread (a CUDA
// graph captures it, cuda/graph.h).
inline Tensor hessian_step_result(const HessianMlp& mlp, const Tensor& x, bool final_backward) {
  const Tensor y = mlp.forward(x);
  const Tensor y_x = grad({y}, {x}, GradArgs().grad_outputs({ops::ones_like(y)}).create_graph())[0];
  Tensor y_xx = grad({y_x}, {x}, GradArgs().grad_outputs({ops::ones_like(y_x)}).create_graph())[0];
  if (final_backward) {
    for (Tensor w : mlp.weights) w.set_grad(Tensor());
    for (Tensor b : mlp.biases) b.set_grad(Tensor());
    backward(ops::sum(y_xx));
  }
  return y_xx;
}

}  // namespace ag::cuda::testing
