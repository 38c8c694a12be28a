#include "engine/accumulate_grad.h"

#include "engine/call.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "ops/ops.h"

namespace ag {

AccumulateGrad::AccumulateGrad(TensorImpl& variable) : variable_(&variable) {
  add_input_metadata({variable.shape, variable.dtype, variable.device});
}

TensorList AccumulateGrad::apply(TensorList&& grads, const Call& call) {
  // The leaf cannot finish dying while the lock is held: its destructor waits here first.
  std::lock_guard<std::mutex> lock(mutex_);
  if (variable_) accumulate_into_grad(*variable_, grads[0], call.create_graph());
  return {};
}

void AccumulateGrad::forget_variable() {
  std::lock_guard<std::mutex> lock(mutex_);
  variable_ = nullptr;
}

bool AccumulateGrad::has_variable() {
  std::lock_guard<std::mutex> lock(mutex_);
  return variable_ != nullptr;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  TensorImpl& impl = *leaf.impl();
  std::lock_guard<std::mutex> lock(impl.autograd_mutex);
  if (!impl.grad_accumulator) impl.grad_accumulator = std::make_shared<AccumulateGrad>(impl);
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
