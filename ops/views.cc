// Note [In-place ops on views] (ops/views.h).
#include "ops/views.h"

#include <mutex>

#include "engine/error.h"
#include "engine/grad_mode.h"
#include "ops/ops.h"
#include "ops/spec.h"

namespace ag::ops {
namespace {

// Copies the history of `from` (a fresh tensor of the same shape) into `to`'s impl.
void take_history(TensorImpl& to, const Tensor& from) {
  to.grad_fn = from.grad_fn();
  to.output_nr = from.output_nr();
  to.requires_grad = from.requires_grad();
}

}  // namespace

void mark_view(const Tensor& view, const Tensor& of) {
  TensorImpl& v = *view.impl();
  v.view_base = of.impl()->view_base ? of.impl()->view_base : of.impl();
  v.view_version.store(view.version(), std::memory_order_relaxed);
}

void check_inplace_on_view(const char* op, const Tensor& t) {
  const auto& base = t.impl()->view_base;
  // As PyTorch's check_inplace: the view requires grad (it was made from a leaf that required
  // grad then) and its base is a leaf, whatever the leaf's requires_grad is now.
  AG_CHECK(!(base && grad_enabled() && base->grad_fn == nullptr && t.requires_grad()), op, ": ",
           t.describe(),
           " is a view of a leaf tensor that requires grad and cannot be modified in place "
           "while grad mode is on; modify a clone() or use a no-grad guard");
}

void rebase_history_after_inplace(const Tensor& t) {
  TensorImpl& v = *t.impl();
  if (!v.view_base) return;  // a base: its views notice the new version when next used
  // t's own history (the in-place node) is current; mark it so before reshape(t) reads it.
  v.view_version.store(t.version(), std::memory_order_relaxed);
  if (!grad_enabled() || !t.requires_grad()) return;  // nothing was recorded
  TracePause bookkeeping;  // the reshapes below are history, not the program's ops
  const Tensor base(v.view_base);
  // The base absorbs the write (PyTorch's CopySlices; our views cover their whole base)...
  const Tensor rebased = reshape(t, base.shape());
  {
    std::lock_guard<std::mutex> lock(v.view_base->autograd_mutex);
    take_history(*v.view_base, rebased);
  }
  // ...and the view is a function of its base again, like every other view of it.
  const Tensor fresh = reshape(base, t.shape());
  std::lock_guard<std::mutex> lock(v.autograd_mutex);
  take_history(v, fresh);
}

void refresh_view(const Tensor& t) {
  if (!t.defined() || !t.impl()->view_base) return;
  TensorImpl& v = *t.impl();
  const uint32_t version = t.version();
  if (v.view_version.load(std::memory_order_relaxed) == version) return;
  const Tensor base(v.view_base);
  // Only a base with a history can give the view a new one; otherwise the view's own
  // (a leaf's, or none) stays.
  if (base.grad_fn() != nullptr) {
    GradModeGuard grad_mode(true);
    TracePause bookkeeping;
    const Tensor fresh = reshape(base, t.shape());
    std::lock_guard<std::mutex> lock(v.autograd_mutex);
    take_history(v, fresh);
  }
  v.view_version.store(version, std::memory_order_relaxed);
}

}  // namespace ag::ops
