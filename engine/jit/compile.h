// Note [Compiled functions]
// jit::CompiledFunction is the engine's jax.jit: it traces a function once, gradients included
// (Note [Tracing gradients], tracer.h), folds the values that are zero by construction (Note
// [Structural zeros], fold_zeros.h), computes each value once (Note [Common subexpressions],
// common_subexpressions.h), drops what nothing reads any more, and runs what is left on
// each call with the executor, with no autograd: the gradients the function asked for are ops of
// the graph. A call frees each value after its last reader and sums gradients in place where no
// one else can see it (Note [Releasing dead values], code.cc), as the eager step would.
//
//   jit::CompiledFunction hessian([&](const TensorList& in) {      // in = {x, w}, x requires grad
//     Tensor y = ops::sum(ops::tanh(ops::mm(in[0], in[1])));
//     Tensor y_x = grad({y}, {in[0]}, GradArgs().create_graph())[0];
//     return TensorList{grad({ops::sum(y_x)}, {in[0]}, GradArgs().create_graph())[0]};
//   }, {x, w});
//   TensorList out = hessian({x2, w2});  // the same shapes, other values
//
// As with any trace, the graph holds the path the example inputs took and their shapes: each call
// checks that the inputs have the example inputs' shapes, dtypes and devices, and what the engine
// decided from requires_grad at trace time (what it saved, which formulas it ran) holds for every
// call. A function whose gradients need an op the JIT cannot run (the gradient of a view whose
// base was written in place goes through the engine's own view bookkeeping ops) fails to compile
// with an error naming the op. The graph runs with grad mode off, so results carry no history (a
// result that is a view of an input still shares its memory, and its requires_grad, as in eager
// code under no_grad). Forward mode inside the function (a DualLevel, engine/functional.h's
// transforms) traces too: jvp rules compute tangents with ops (Note [Jvp rules], ops/jvp.h), so
// a forward-over-reverse y_xx compiles as nested grads do; jacfwd and jacrev do not, as they
// assemble their rows with stack (Note [Variadic ops]).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "engine/jit/executor.h"
#include "engine/jit/ir.h"
#include "engine/node.h"

namespace ag::jit {

struct CompileOptions {
  bool fold_zeros = true;  // Note [Structural zeros]; off: every traced op runs
  // Note [Common subexpressions]; off: a value computed twice is computed twice
  bool merge_common_subexpressions = true;
};

class CompiledFunction {
 public:
  using Function = std::function<TensorList(const TensorList&)>;
  CompiledFunction(const Function& fn, const TensorList& example_inputs,
                   const CompileOptions& options = {});
  ~CompiledFunction();
  CompiledFunction(const CompiledFunction&) = delete;
  CompiledFunction& operator=(const CompiledFunction&) = delete;

  // Throws ag::Error naming the input when one does not match the example's shape, dtype or
  // device.
  TensorList operator()(const TensorList& inputs) const;

  const Graph& graph() const { return *graph_; }
  int64_t traced_nodes() const { return traced_nodes_; }  // before folding
  int64_t zeros_folded() const { return zeros_folded_; }
  int64_t subexpressions_merged() const { return subexpressions_merged_; }

 private:
  std::vector<TensorMeta> input_metas_;
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<GraphExecutor> exec_;
  int64_t traced_nodes_ = 0;
  int64_t zeros_folded_ = 0;
  int64_t subexpressions_merged_ = 0;
};

}  // namespace ag::jit
