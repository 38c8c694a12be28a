#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "engine/forward_ad.h"
#include "engine/grad_mode.h"
#include "engine/node.h"
#include "engine/options.h"

namespace ag {

// Note [Accumulating into .grad]
// The rules are PyTorch's (AccumulateGrad for leaves, the retains-grad hook for the interior
// tensors that retain_grad() or backward(inputs=...) names: Note [Hooks], engine/hooks.h):
// - .grad never shares storage with a tensor the caller or another leaf holds. A leaf's first
//   gradient is kept as is only when nothing else refers to it or to its storage and it carries
//   no history; otherwise .grad is a copy (a recorded clone under create_graph).
// - Later gradients of a leaf are added in place when grad mode is off (no create_graph), so a
//   .grad handle the caller holds sees the update (a dual level live or not: the sum is add_).
//   Under create_graph the sum is a new, differentiable tensor.
// - An interior tensor's .grad is always replaced: first a copy, then old + new.
// - AccumulateGrad reads its leaf's state when it runs, not when the graph was built: a leaf that
//   no longer requires grad gets nothing, and one that an in-place op has since given a history
//   ("moved into the graph interior") is an error.
// The sums are ops, and recording an op may lock a tensor's autograd_mutex (a leaf's
// AccumulateGrad is created under it), so that lock guards only the reads and writes of the
// .grad field and is never held across an op. Accumulations into one leaf are serialized by its
// AccumulateGrad's own mutex instead.

// The node at the end of every path: adds the incoming gradient into a leaf's .grad. Its
// topological_nr is 0 (Note [Topological number]). The leaf owns it; it points back at the leaf
// with a plain pointer, which the leaf's destructor clears, so the node never keeps its leaf
// alive and a gradient for a leaf nobody holds any more is simply dropped.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(TensorImpl& variable);
  TensorList apply(TensorList&& grads, const Call& call) override;
  std::string name() const override { return "AccumulateGrad"; }
  // Adds `grad` into the leaf's .grad (Note [Accumulating into .grad]); grad mode must already be
  // create_graph. Also used by backward(inputs=...) for the leaves it names.
  void accumulate(Tensor&& grad);
  // Called by the destructor of every tensor that holds this node: if it is the leaf, waits for
  // an accumulation in progress, then drops the pointer. (A saved leaf is an alias that holds
  // the leaf's node too: Note [Saved values hold no cycles].)
  void forget_variable(const TensorImpl* dying);
  // Called by TensorImpl::set_requires_grad: if `tensor` is the leaf, copies its new flag.
  void variable_requires_grad_set(const TensorImpl& tensor);
  // Whether the leaf is still alive (for tests).
  bool has_variable();
  // A handle to the leaf, or an undefined tensor once it died. Only for a leaf marked
  // upgradable (Note [Upgrading a plain pointer], engine/memory/ref.h): the one that
  // post-accumulate-grad hooks are handed.
  Tensor variable_if_alive();
  // The leaf's requires_grad now, or when it died. Lock-free (Note [The leaf's flag, copied]).
  bool variable_requires_grad() const { return requires_grad_.load(std::memory_order_acquire); }

 private:
  std::mutex mutex_;  // held while variable_ is dereferenced, and by forget_variable()
  // The leaf, or null once it died. Written only under mutex_, and only ever from the leaf to
  // null, so a tensor that finds something else here without the lock is not the leaf and never
  // will be (forget_variable()'s fast path).
  std::atomic<TensorImpl*> variable_;
  // Note [The leaf's flag, copied]
  // Every saved leaf asks for its leaf's requires_grad when it is unpacked (Note [Saved values
  // hold no cycles]), and so does backward() for every leaf it reaches; reading it through
  // variable_ would need mutex_, as the leaf may be dying on another thread. So the node keeps a
  // copy that any thread can read: set from the leaf here, updated by every write to the leaf's
  // flag (TensorImpl::set_requires_grad), and kept as the last value once the leaf died.
  std::atomic<bool> requires_grad_;
};

namespace detail {
// grad_accumulator()'s first call on a leaf: creates the node (and the leaf's saved_alias) under
// the leaf's lock.
std::shared_ptr<AccumulateGrad> create_grad_accumulator(const Tensor& leaf);
}  // namespace detail

// A new alias of `data` (a leaf's) that stands for the leaf while it requires grad: it requires
// grad, and its gradient flows into `leaf` (Note [Saved values hold no cycles]).
Tensor leaf_stand_in(const Tensor& data, std::shared_ptr<AccumulateGrad> leaf);

// The leaf's AccumulateGrad, created on first use and kept for the leaf's lifetime. Inline for
// the common case, a leaf that has one already: every op recorded on a leaf asks.
inline std::shared_ptr<AccumulateGrad> grad_accumulator(const Tensor& leaf) {
  TensorImpl& impl = *leaf.impl();
  if (impl.has_grad_accumulator.load(std::memory_order_acquire)) return impl.grad_accumulator;
  return detail::create_grad_accumulator(leaf);
}

// What a save of `leaf` keeps while the leaf requires grad (TensorImpl::saved_alias): an alias of
// its data that requires grad and holds its AccumulateGrad, created with the AccumulateGrad.
inline Tensor saved_alias(const Tensor& leaf) {
  TensorImpl& impl = *leaf.impl();
  if (!impl.has_grad_accumulator.load(std::memory_order_acquire)) {
    detail::create_grad_accumulator(leaf);
  }
  return Tensor(impl.saved_alias);
}

// The retains-grad hook of an interior tensor (Tensor::retain_grad(), which backward(inputs=...)
// calls): its .grad becomes a copy of `grad`, or old + grad (Note [Accumulating into .grad]);
// grad mode must already be create_graph. Takes the tensor's state, not a handle: the hook
// reaches it through a plain pointer (RetainedTensor, engine/hooks.h).
void accumulate_into_interior_grad(TensorImpl& tensor, const Tensor& grad);

// Whether `g` may be kept or written as it is: nobody else refers to it or to its storage (so no
// caller, saved value or view can see it change), and it has no history.
bool held_only_here(const Tensor& g);

// Whether `target` may take `other` in place as their sum (Note [Summing gradients in place],
// engine/engine.cc): held only here, and of the same shape, dtype and device.
inline bool can_sum_into(const Tensor& target, const Tensor& other) {
  return held_only_here(target) && target.same_layout_as(other);
}

// Whether an op may add its result into `sum` in place (Note [Sums fused into formulas],
// engine/engine.cc): the switch on, grad mode off (nothing records the sum), and `sum` defined
// and held only here. The op itself checks that its operands have sum's layout.
inline bool can_add_into(const Tensor& sum, const EngineOptions& options) {
  return options.fuse_gradient_sums && values_unobserved() && sum.defined() && held_only_here(sum);
}

}  // namespace ag
