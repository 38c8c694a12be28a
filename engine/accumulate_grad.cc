#include "engine/accumulate_grad.h"

#include "engine/call.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "ops/ops.h"

namespace ag {

AccumulateGrad::AccumulateGrad(const std::shared_ptr<TensorImpl>& variable) : variable_(variable) {
  add_input_metadata({variable->shape, variable->dtype, variable->storage->device()});
}

TensorList AccumulateGrad::apply(TensorList&& grads, const Call& call) {
  if (std::shared_ptr<TensorImpl> variable = variable_.lock()) {
    accumulate_into_grad(*variable, grads[0], call.create_graph());
  }
  return {};
}

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  TensorImpl& impl = *leaf.impl();
  std::lock_guard<std::mutex> lock(impl.autograd_mutex);
  if (!impl.grad_accumulator) impl.grad_accumulator = std::make_shared<AccumulateGrad>(leaf.impl());
  return impl.grad_accumulator;
}

void accumulate_into_grad(TensorImpl& variable, const Tensor& grad, bool create_graph) {
  if (!grad.defined()) return;
  // Without create_graph, .grad must not carry history from the backward pass.
  Tensor incoming = create_graph ? grad : grad.detach();
  std::lock_guard<std::mutex> lock(variable.autograd_mutex);
  if (!variable.grad) {
    variable.grad = incoming.impl();
    return;
  }
  GradModeGuard mode(create_graph);
  variable.grad = ops::add(Tensor(variable.grad), incoming).impl();
}

}  // namespace ag
