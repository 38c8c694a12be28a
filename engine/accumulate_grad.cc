#include "engine/accumulate_grad.h"

#include "engine/engine_ops.h"
#include "engine/error.h"
#include "engine/forward_ad.h"
#include "engine/grad_mode.h"

namespace ag {

namespace {

// .grad is read and written under autograd_mutex, which is never held across an op.
Tensor read_grad(TensorImpl& t) {
  std::lock_guard<std::mutex> lock(t.autograd_mutex);
  return Tensor(t.grad);
}

// Returns the replaced value, so that it is released after the lock.
Ref<TensorImpl> write_grad(TensorImpl& t, Tensor&& value) {
  Ref<TensorImpl> incoming = value.impl();
  value = Tensor();
  std::lock_guard<std::mutex> lock(t.autograd_mutex);
  std::swap(t.grad, incoming);
  return incoming;
}

}  // namespace

bool held_only_here(const Tensor& g) {
  const Ref<TensorImpl>& impl = g.impl();
  // A non-contiguous gradient (a transpose's) is never kept as it is: .grad and the sums the
  // engine writes in place are contiguous (Note [Strided tensors]).
  return impl.use_count() == 1 && impl->storage.use_count() == 1 && !impl->requires_grad &&
         impl->strides == nullptr;
}

// A leaf's destructor calls this (declared with TensorImpl, defined here, where AccumulateGrad
// is known, so that tensors do not depend on nodes).
void TensorImpl::forget_grad_accumulator() { grad_accumulator->forget_variable(this); }

void TensorImpl::set_requires_grad(bool value) {
  requires_grad = value;
  if (has_grad_accumulator.load(std::memory_order_acquire)) {
    grad_accumulator->variable_requires_grad_set(*this);
  }
}

AccumulateGrad::AccumulateGrad(TensorImpl& variable)
    : Node(LeafAccumulator{}), variable_(&variable), requires_grad_(variable.requires_grad) {
  add_input_metadata({variable.shape, variable.dtype, variable.device});
}

TensorList AccumulateGrad::apply(TensorList&& grads, const Call&) {
  accumulate(std::move(grads[0]));
  return {};
}

void AccumulateGrad::accumulate(Tensor&& grad) {
  if (!grad.defined()) return;
  // A trace holds values, and .grad is a side effect on a tensor outside them.
  AG_CHECK(!engine_ops::tracing(),
           "backward() cannot accumulate into .grad while ops are traced: trace grad(), which "
           "returns the gradients");
  // The leaf cannot finish dying while the lock is held: its destructor waits here first.
  std::lock_guard<std::mutex> lock(mutex_);
  TensorImpl* const variable = variable_.load(std::memory_order_relaxed);
  if (!variable) return;
  TensorImpl& leaf = *variable;
  AG_CHECK(leaf.grad_fn == nullptr,
           "AccumulateGrad: leaf variable has been moved into the graph "
           "interior (an in-place op gave this ",
           to_string(leaf.dtype), to_string(leaf.shape),
           " leaf a history after the graph being differentiated was built)");
  if (!leaf.requires_grad) return;
  Tensor old = read_grad(leaf);
  if (!old.defined()) {
    // A contiguous leaf takes a contiguous gradient as it is; other leaves get PyTorch's layout.
    const bool steal = values_unobserved() && held_only_here(grad) && !leaf.strides;
    write_grad(leaf,
               steal ? std::move(grad) : engine_ops::clone_for_grad(grad, leaf.strides.get()));
  } else if (!grad_enabled()) {
    // In place whether or not a dual level is live, as PyTorch's `variable_grad += new_grad`:
    // add_ is an op, so .grad's tangent follows it (Note [Forward mode]).
    engine_ops::add_in_place(old, grad);
  } else {
    write_grad(leaf, engine_ops::add(old, grad));
  }
}

void AccumulateGrad::forget_variable(const TensorImpl* dying) {
  // Most calls come from aliases of the leaf (saved values), which need no lock: see variable_.
  if (variable_.load(std::memory_order_acquire) != dying) return;
  std::lock_guard<std::mutex> lock(mutex_);
  variable_.store(nullptr, std::memory_order_release);
}

void AccumulateGrad::variable_requires_grad_set(const TensorImpl& tensor) {
  // Only the leaf itself writes its flag, so no lock is needed to know it is alive.
  if (variable_.load(std::memory_order_acquire) != &tensor) return;
  requires_grad_.store(tensor.requires_grad, std::memory_order_release);
}

bool AccumulateGrad::has_variable() { return variable_.load(std::memory_order_acquire) != nullptr; }

Tensor AccumulateGrad::variable_if_alive() {
  // The lock keeps a dying leaf's destructor (forget_variable) from returning meanwhile.
  std::lock_guard<std::mutex> lock(mutex_);
  TensorImpl* leaf = variable_.load(std::memory_order_acquire);
  return leaf ? Tensor(Ref<TensorImpl>::upgrade(leaf)) : Tensor();
}

std::shared_ptr<AccumulateGrad> detail::create_grad_accumulator(const Tensor& leaf) {
  TensorImpl& impl = *leaf.impl();
  std::lock_guard<std::mutex> lock(impl.autograd_mutex);
  if (impl.has_grad_accumulator.load(std::memory_order_relaxed)) return impl.grad_accumulator;
  // An alias that stands for a leaf (a saved value, unpacked and used by a formula under
  // create_graph) comes with the leaf's node; a leaf gets its own.
  if (!impl.grad_accumulator) impl.grad_accumulator = std::make_shared<AccumulateGrad>(impl);
  impl.saved_alias = leaf_stand_in(leaf, impl.grad_accumulator).impl();
  impl.has_grad_accumulator.store(true, std::memory_order_release);
  return impl.grad_accumulator;
}

Tensor leaf_stand_in(const Tensor& data, std::shared_ptr<AccumulateGrad> leaf) {
  Tensor alias = data.detach();
  alias.impl()->requires_grad = true;
  alias.impl()->grad_accumulator = std::move(leaf);
  return alias;
}

void accumulate_into_interior_grad(TensorImpl& tensor, const Tensor& grad) {
  if (!grad.defined()) return;
  Tensor old = read_grad(tensor);
  // As PyTorch's retains-grad hook: the first gradient copied contiguous.
  write_grad(tensor,
             old.defined() ? engine_ops::add(old, grad) : engine_ops::contiguous_clone(grad));
}

}  // namespace ag
