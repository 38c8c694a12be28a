// Note [Compiled functions] (compile.h).
#include "engine/jit/compile.h"

#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/jit/common_subexpressions.h"
#include "engine/jit/fold_zeros.h"
#include "engine/jit/tracer.h"

namespace ag::jit {

CompiledFunction::CompiledFunction(const Function& fn, const TensorList& example_inputs,
                                   const CompileOptions& options) {
  for (const Tensor& t : example_inputs) {
    AG_CHECK(t.defined(), "jit::CompiledFunction: example input ", input_metas_.size(),
             " is undefined");
    input_metas_.push_back(TensorMeta::of(t));
  }
  std::vector<std::optional<TensorMeta>> metas;
  {
    TracingScope scope(example_inputs, TraceMode::kWithGradients);
    graph_ = scope.finish(fn(example_inputs), &metas);
  }
  traced_nodes_ = static_cast<int64_t>(graph_->numNodes());
  if (options.fold_zeros) zeros_folded_ = foldStructuralZeros(*graph_, metas);
  eliminateDeadCode(*graph_);
  // Merged after the dead are gone, so that the count is of ops a call would have run.
  if (options.merge_common_subexpressions) {
    subexpressions_merged_ = eliminateCommonSubexpressions(*graph_, metas);
    eliminateDeadCode(*graph_);  // what only a merged node read (broadcast_to's input)
  }
  exec_ = std::make_unique<GraphExecutor>(*graph_);
}

CompiledFunction::~CompiledFunction() = default;

TensorList CompiledFunction::operator()(const TensorList& inputs) const {
  AG_CHECK(inputs.size() == input_metas_.size(), "jit::CompiledFunction: called with ",
           inputs.size(), " inputs; it was traced with ", input_metas_.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorMeta& m = input_metas_[i];
    AG_CHECK(inputs[i].defined() && inputs[i].shape() == m.shape && inputs[i].dtype() == m.dtype &&
                 inputs[i].device() == m.device,
             "jit::CompiledFunction: input ", i, " is ",
             inputs[i].defined() ? inputs[i].describe() : std::string("undefined"),
             "; it was traced with ", to_string(m.dtype), to_string(m.shape), " on ",
             to_string(m.device));
  }
  NoGradGuard no_grad;  // the graph's gradients are its own ops
  return exec_->run(inputs);
}

}  // namespace ag::jit
