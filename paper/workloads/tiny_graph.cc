#include "paper/workloads/tiny_graph.h"

#include "engine/autograd.h"
#include "ops/ops.h"
#include "paper/workloads/timing.h"

namespace ag::paper {

TinyGraphInputs make_tiny_graph_inputs() {
  TinyGraphInputs in;
  in.a = ops::uniform({2, 2}, 0, 1, 1);
  in.a.set_requires_grad(true);
  in.b = ops::uniform({2, 2}, 0, 1, 2);
  in.b.set_requires_grad(true);
  in.gradient = ops::ones({2, 2});
  return in;
}

double tiny_graph_call(const TinyGraphInputs& in) {
  TensorList g = grad({in.a * in.b}, {in.a, in.b}, GradArgs().grad_outputs({in.gradient}));
  return static_cast<double>(g[0].data<float>()[0] + g[1].data<float>()[0]);
}

ScalarChainInputs make_scalar_chain_inputs(int length) {
  ScalarChainInputs in;
  in.x = ops::uniform({4}, 0, 1, 3);
  in.x.set_requires_grad(true);
  in.length = length;
  return in;
}

Tensor scalar_chain_grad(const ScalarChainInputs& in, bool identity_hooks) {
  Tensor y = in.x;
  for (int i = 0; i < in.length; ++i) {
    y = y * 1.0001;
    if (identity_hooks) y.register_hook([](const Tensor&) { return Tensor(); });
  }
  return grad({ops::sum(y)}, {in.x})[0];
}

double scalar_chain_call(const ScalarChainInputs& in, bool identity_hooks) {
  return static_cast<double>(scalar_chain_grad(in, identity_hooks).data<float>()[0]);
}

double time_tiny_graph_us(const EngineOptions& options, int iters) {
  static const TinyGraphInputs in = make_tiny_graph_inputs();
  OptionsGuard guard(options);
  return seconds_per_call(iters, [&] { return tiny_graph_call(in); }) * 1e6;
}

double time_scalar_chain_ms(const ScalarChainInputs& in, const EngineOptions& options, int iters) {
  OptionsGuard guard(options);
  return seconds_per_call(iters, [&] { return scalar_chain_call(in); }) * 1e3;
}

}  // namespace ag::paper
