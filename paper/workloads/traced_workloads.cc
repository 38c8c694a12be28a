#include "paper/workloads/traced_workloads.h"

#include "engine/autograd.h"
#include "engine/jit/create_autodiff_subgraphs.h"
#include "engine/jit/tracer.h"
#include "ops/ops.h"
#include "paper/workloads/forward_workloads.h"

namespace ag::paper {
namespace {

TensorList mlp_inputs(const Mlp& mlp, const Tensor& x) {
  TensorList inputs{x};
  inputs.insert(inputs.end(), mlp.weights.begin(), mlp.weights.end());
  inputs.insert(inputs.end(), mlp.biases.begin(), mlp.biases.end());
  return inputs;
}

// The MLP whose weights and biases are mlp_inputs()' tensors `in`, after x.
Mlp mlp_of(const Mlp& mlp, const TensorList& in) {
  const size_t layers = mlp.weights.size();
  Mlp traced = mlp;
  traced.weights.assign(in.begin() + 1, in.begin() + 1 + layers);
  traced.biases.assign(in.begin() + 1 + layers, in.end());
  return traced;
}

}  // namespace

std::unique_ptr<jit::Graph> trace_hessian_forward(const Mlp& mlp, const Tensor& x) {
  return jit::trace(
      [&](const TensorList& in) { return TensorList{mlp_of(mlp, in).forward(in[0])}; },
      mlp_inputs(mlp, x));
}

std::unique_ptr<jit::Graph> trace_unrolled_loop_loss(const UnrolledLoopConfig& c) {
  std::vector<int64_t> targets(c.batch);
  for (int i = 0; i < c.batch; ++i) targets[i] = (i * 7 + 3) % c.classes;
  const TensorList inputs{ops::uniform({c.batch, c.features}, -1, 1, 11),
                          ops::uniform({c.features, c.classes}, -0.1, 0.1, 12),
                          ops::zeros({c.classes})};
  return jit::trace(
      [&](const TensorList& in) {
        return TensorList{ops::cross_entropy(ops::add(ops::matmul(in[0], in[1]), in[2]), targets)};
      },
      inputs);
}

CompiledHessian::CompiledHessian(const Mlp& mlp, const Tensor& x)
    : mlp_(mlp), x_(x), graph_(trace_hessian_forward(mlp, x)) {
  jit::createAutodiffSubgraphs(*graph_);
  exec_ = std::make_unique<jit::GraphExecutor>(*graph_);
}

double CompiledHessian::step(bool final_backward) const {
  const TensorList inputs = mlp_inputs(mlp_, x_);
  return hessian_step(mlp_, x_, final_backward,
                      [&](const Tensor&) { return exec_->run(inputs)[0]; });
}

JitHessianStep::JitHessianStep(const Mlp& mlp, const Tensor& x, bool final_backward,
                               const jit::CompileOptions& options, YxxBy by)
    : inputs_(mlp_inputs(mlp, x)) {
  auto step = [&mlp, final_backward, by](const TensorList& in) {
    const Tensor y_xx = by == YxxBy::kNestedGrads
                            ? nested_grads(mlp_of(mlp, in).forward(in[0]), in[0])
                            : forward_over_reverse_y_xx(mlp_of(mlp, in), in[0]);
    if (!final_backward) return TensorList{y_xx};
    const Tensor total = ops::sum(y_xx);
    TensorList params(in.begin() + 1, in.end());
    TensorList out = grad({total}, params, GradArgs().allow_unused());
    out.insert(out.begin(), {y_xx, total});
    return out;
  };
  fn_ = std::make_unique<jit::CompiledFunction>(step, inputs_, options);
}

double JitHessianStep::step() const { return ops::sum((*fn_)(inputs_)[0]).item(); }

}  // namespace ag::paper
