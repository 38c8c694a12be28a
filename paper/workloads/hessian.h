// Seed 001's hessian benchmark (PR 82544): an MLP (input 16, six hidden Linear+ReLU layers of
// width 256, output 1) and d2y/dx2 by two nested grad(create_graph=true) w.r.t. x:
//   y = mlp(x);  y_x = grad(y, x, ones, create_graph);  y_xx = grad(y_x, x, ones, create_graph)
// optionally followed by y_xx.sum().backward() into the weights (a training step).
// With the per-call needs_input_grad, the linear nodes skip their weight-gradient matmul when
// only d/dx is requested: about half of the backward matmuls.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/options.h"
#include "engine/tensor.h"

namespace ag::paper {

// ReLU is the published workload: as in PyTorch, relu's derivative (threshold_backward) keeps
// y_x connected to x, so y_xx is zero but computed through the graph and the final backward
// reaches the weights. Tanh gives a workload whose second-order terms are not zero.
enum class Activation { kRelu, kTanh };
const char* activation_name(Activation a);

struct HessianConfig {
  int input = 16;
  int hidden = 256;
  int layers = 6;  // hidden Linear+ReLU layers
  int batch = 1000;
  Activation activation = Activation::kRelu;
  Device device = kCPU;
};

struct Mlp {
  TensorList weights, biases;  // requires grad
  Activation activation = Activation::kRelu;
  Tensor forward(const Tensor& x) const;
  void clear_grads() const;  // the weights' and biases' .grad
};
Mlp make_mlp(const HessianConfig& config);
Tensor make_hessian_input(const HessianConfig& config);

// y_xx = grad(grad(y, x, ones, create_graph), x, ones, create_graph): the step's two nested grads.
Tensor nested_grads(const Tensor& y, const Tensor& x);

// One step; returns a checksum of y_xx (reading it back, so it also waits for a device). With
// `final_backward`, also accumulates into the weights' .grad (which the step clears first).
double hessian_step(const Mlp& mlp, const Tensor& x, bool final_backward);
// The same step's device work, y_xx returned unread (a CUDA graph captures this, cuda/graph.h).
Tensor hessian_step_result(const Mlp& mlp, const Tensor& x, bool final_backward);
// The same step with y = forward(x) computed by `forward` (e.g. a traced graph's executor).
double hessian_step(const Mlp& mlp, const Tensor& x, bool final_backward,
                    const std::function<Tensor(const Tensor&)>& forward);

struct HessianStepStats {
  double seconds = 0;
  double cpu_seconds = 0;  // CPU time of all this process's threads during the step
  int64_t peak_bytes = 0;  // allocator peak during the step, above the live bytes before it
  int64_t formulas_evaluated = 0;
  int64_t weight_grad_matmuls = 0;  // "linear:weight" formulas run
  int64_t products_of_zeros = 0;  // products written as zeros (Note [Products with a zero operand])
  int64_t fused_formulas = 0;     // formulas run as one kernel (Note [Fused formula kernels])
  int64_t fused_sums = 0;  // gradient sums made inside a formula's kernel (Note [Sums fused into
                           // formulas], engine/engine.cc)
};
// One timed step under `options` (also used to read peak bytes and counters).
HessianStepStats measure_hessian_step(const Mlp& mlp, const Tensor& x, bool final_backward,
                                      const EngineOptions& options);
// Steps run back to back until `min_seconds` have passed (one at least): seconds and cpu_seconds
// per step, the last step's peak bytes and counters (Note [A stretch of steps], timing.h).
HessianStepStats measure_hessian_steps(const Mlp& mlp, const Tensor& x, bool final_backward,
                                       const EngineOptions& options, double min_seconds);

// The three matrix-product shapes of a hidden layer's step, timed alone on the CPU (interleaved
// medians, seconds): the forward h @ W^T and the input gradient g @ W, which both variants run, and
// the weight gradient g^T @ h (inner dimension = batch), which per-call needs skips. Per hidden
// layer the step runs 4 products of the first two kinds with per-call needs on and 3 weight
// gradients more with it off, so products alone bound the off/on ratio at
// (4 * kept + 3 * weight) / (4 * kept).
struct LayerProductTimes {
  double forward = 0, input_grad = 0, weight_grad = 0;
  double products_only_bound() const {
    const double kept = (2 * forward + 2 * input_grad) / 4;
    return (4 * kept + 3 * weight_grad) / (4 * kept);
  }
};
LayerProductTimes measure_layer_products(const HessianConfig& config, int reps);

// A peer's hessian step task (paper/peers/torch_peer.py, jax_peer.py): `head` ({"hessian",
// "autograd"}, ...), then the step's activation, final backward, batch and width, and the stretch
// of steps in seconds (Note [A stretch of steps]).
std::vector<std::string> hessian_peer_task(std::vector<std::string> head,
                                           const HessianConfig& config, bool final_backward,
                                           double stretch);

}  // namespace ag::paper
