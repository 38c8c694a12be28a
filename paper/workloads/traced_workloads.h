// Seed 002 on real programs: the paper's workloads traced into IR (engine/jit/tracer.h), the
// create_autodiff_subgraphs pass on them, and the hessian step run through the executor, whose
// DifferentiableGraphs are autograd nodes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/jit/compile.h"
#include "engine/jit/executor.h"
#include "engine/jit/ir.h"
#include "paper/workloads/hessian.h"
#include "paper/workloads/unrolled_loop.h"

namespace ag::paper {

// The hessian MLP's forward y = mlp(x), traced with x, the weights and the biases as inputs.
std::unique_ptr<jit::Graph> trace_hessian_forward(const Mlp& mlp, const Tensor& x);
// One step's loss of the unrolled loop, cross_entropy(x @ W + b, targets), traced with x, W and
// b as inputs.
std::unique_ptr<jit::Graph> trace_unrolled_loop_loss(const UnrolledLoopConfig& config);

// The traced hessian forward after the pass, ready to run: the executor's graph and its inputs.
class CompiledHessian {
 public:
  CompiledHessian(const Mlp& mlp, const Tensor& x);
  // hessian_step with the forward run by the executor.
  double step(bool final_backward) const;
  const jit::Graph& graph() const { return *graph_; }

 private:
  const Mlp& mlp_;
  Tensor x_;
  std::unique_ptr<jit::Graph> graph_;
  std::unique_ptr<jit::GraphExecutor> exec_;
};

// Seed 001's whole step as one jit::CompiledFunction, as JAX's jit step (Note [Compiled
// functions]): traced once with its gradients, structural zeros folded (Note [Structural zeros]),
// then run with no autograd. It returns y_xx and, with `final_backward`, sum(y_xx) and its
// gradients with respect to the weights and biases (JAX's value_and_grad), where the eager step
// accumulates those into .grad.
// y_xx by nested grads, or by forward-over-reverse (Note [Forward-over-reverse y_xx],
// forward_workloads.h), which the trace records like any other ops.
enum class YxxBy { kNestedGrads, kForwardOverReverse };
class JitHessianStep {
 public:
  JitHessianStep(const Mlp& mlp, const Tensor& x, bool final_backward,
                 const jit::CompileOptions& options = {}, YxxBy by = YxxBy::kNestedGrads);
  // One call; returns sum(y_xx), read back.
  double step() const;
  const jit::CompiledFunction& function() const { return *fn_; }

 private:
  TensorList inputs_;
  std::unique_ptr<jit::CompiledFunction> fn_;
};

}  // namespace ag::paper
