#include "engine/accumulate_grad.h"

#include "engine/call.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "ops/ops.h"

namespace ag {

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> variable)
    : variable_(std::move(variable)) {
  add_input_metadata({variable_->shape, variable_->dtype, variable_->storage->device()});
}

TensorList AccumulateGrad::apply(TensorList&& grads, const Call& call) {
  accumulate_into_grad(*variable_, grads[0], call.create_graph());
  return {};
}

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  TensorImpl& impl = *leaf.impl();
  std::lock_guard<std::mutex> lock(impl.autograd_mutex);
  if (auto existing = impl.grad_accumulator.lock()) return existing;
  auto node = std::make_shared<AccumulateGrad>(leaf.impl());
  impl.grad_accumulator = node;
  return node;
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
