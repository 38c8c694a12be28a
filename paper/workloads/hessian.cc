#include "paper/workloads/hessian.h"

#include <cmath>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/grad_mode.h"
#include "engine/memory/allocator.h"
#include "ops/backend.h"
#include "ops/ops.h"
#include "paper/workloads/timing.h"

namespace ag::paper {

const char* activation_name(Activation a) { return a == Activation::kRelu ? "ReLU" : "Tanh"; }

Tensor Mlp::forward(const Tensor& x) const {
  Tensor h = x;
  for (size_t i = 0; i < weights.size(); ++i) {
    h = ops::linear(h, weights[i], biases[i]);
    if (i + 1 < weights.size()) h = activation == Activation::kRelu ? ops::relu(h) : ops::tanh(h);
  }
  return h;
}

void Mlp::clear_grads() const {
  for (Tensor w : weights) w.set_grad(Tensor());
  for (Tensor b : biases) b.set_grad(Tensor());
}

Mlp make_mlp(const HessianConfig& c) {
  Mlp mlp;
  mlp.activation = c.activation;
  int in = c.input;
  uint64_t seed = 100;
  for (int l = 0; l <= c.layers; ++l) {
    const int out = l < c.layers ? c.hidden : 1;
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));  // PyTorch's Linear init range
    Tensor w = ops::uniform({out, in}, -bound, bound, seed++, DType::kFloat32, c.device);
    Tensor b = ops::uniform({out}, -bound, bound, seed++, DType::kFloat32, c.device);
    w.set_requires_grad(true);
    b.set_requires_grad(true);
    mlp.weights.push_back(w);
    mlp.biases.push_back(b);
    in = out;
  }
  return mlp;
}

Tensor make_hessian_input(const HessianConfig& c) {
  Tensor x = ops::uniform({c.batch, c.input}, -1, 1, 7, DType::kFloat32, c.device);
  x.set_requires_grad(true);
  return x;
}

double hessian_step(const Mlp& mlp, const Tensor& x, bool final_backward) {
  return hessian_step(mlp, x, final_backward, [&](const Tensor& in) { return mlp.forward(in); });
}

Tensor nested_grads(const Tensor& y, const Tensor& x) {
  Tensor y_x = grad({y}, {x}, GradArgs().grad_outputs({ops::ones_like(y)}).create_graph())[0];
  return grad({y_x}, {x}, GradArgs().grad_outputs({ops::ones_like(y_x)}).create_graph())[0];
}

namespace {

// y_xx of y = the MLP's forward of x, then the final backward into the weights if asked (their
// .grad cleared first): the step's device work.
Tensor step_result(const Mlp& mlp, const Tensor& x, const Tensor& y, bool final_backward) {
  Tensor y_xx = nested_grads(y, x);
  if (final_backward) {
    mlp.clear_grads();
    backward(ops::sum(y_xx));
  }
  return y_xx;
}

}  // namespace

Tensor hessian_step_result(const Mlp& mlp, const Tensor& x, bool final_backward) {
  return step_result(mlp, x, mlp.forward(x), final_backward);
}

double hessian_step(const Mlp& mlp, const Tensor& x, bool final_backward,
                    const std::function<Tensor(const Tensor&)>& forward) {
  return ops::sum(step_result(mlp, x, forward(x), final_backward)).item();
}

HessianStepStats measure_hessian_step(const Mlp& mlp, const Tensor& x, bool final_backward,
                                      const EngineOptions& options) {
  OptionsGuard guard(options);
  HessianStepStats stats;
  const DeviceType dev = x.device().type;
  const int64_t live_before = live_bytes(dev);
  reset_peak_bytes(dev);
  reset_counters();
  const double cpu_start = process_cpu_seconds();
  auto start = Clock::now();
  double checksum = hessian_step(mlp, x, final_backward);
  stats.seconds = seconds_since(start);
  stats.cpu_seconds = process_cpu_seconds() - cpu_start;
  do_not_optimize(checksum);
  stats.peak_bytes = peak_bytes(dev) - live_before;
  stats.formulas_evaluated = counters().formulas_evaluated;
  stats.weight_grad_matmuls = counters().formula_count("linear:weight");
  stats.products_of_zeros = counters().products_of_zeros;
  stats.fused_formulas = counters().fused_formulas;
  stats.fused_sums = counters().fused_sums;
  return stats;
}

HessianStepStats measure_hessian_steps(const Mlp& mlp, const Tensor& x, bool final_backward,
                                       const EngineOptions& options, double min_seconds) {
  HessianStepStats last;
  double seconds = 0, cpu_seconds = 0;
  int steps = 0;
  do {
    last = measure_hessian_step(mlp, x, final_backward, options);
    seconds += last.seconds;
    cpu_seconds += last.cpu_seconds;
    ++steps;
  } while (seconds < min_seconds);
  last.seconds = seconds / steps;
  last.cpu_seconds = cpu_seconds / steps;
  return last;
}

LayerProductTimes measure_layer_products(const HessianConfig& c, int reps) {
  NoGradGuard no_grad;
  const Tensor h = ops::uniform({c.batch, c.hidden}, -1, 1, 1);
  const Tensor g = ops::uniform({c.batch, c.hidden}, -1, 1, 2);
  const Tensor w = ops::uniform({c.hidden, c.hidden}, -1, 1, 3);
  ops::Backend& backend = ops::backend_for(kCPU);
  // op(A) @ op(B) exactly as the linear and product formulas call it (no transposed copies).
  auto timed = [&](const Tensor& a, const Tensor& b, bool ta, bool tb) {
    return [&, ta, tb] {
      return seconds_per_call(
          1, [&] { return backend.matmul(a, b, ta, tb, nullptr).data<float>()[0]; });
    };
  };
  const std::vector<double> med = interleaved_medians(
      reps, {timed(h, w, false, true), timed(g, w, false, false), timed(g, h, true, false)});
  return {med[0], med[1], med[2]};
}

std::vector<std::string> hessian_peer_task(std::vector<std::string> head,
                                           const HessianConfig& config, bool final_backward,
                                           double stretch) {
  head.insert(head.end(), {config.activation == Activation::kRelu ? "relu" : "tanh",
                           final_backward ? "1" : "0", std::to_string(config.batch),
                           std::to_string(config.hidden), std::to_string(stretch)});
  return head;
}

}  // namespace ag::paper
