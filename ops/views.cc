// Note [In-place ops on views] (ops/views.h).
#include "ops/views.h"

#include <mutex>

#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/hooks.h"
#include "ops/ops.h"
#include "ops/trace_hook.h"

namespace ag::ops {
namespace {

// Copies the history of `from` (a fresh tensor of the same shape) into `to`'s impl, and the
// retains-grad hook of `to` along with it (Note [Hooks], engine/hooks.h).
void take_history(TensorImpl& to, const Tensor& from) {
  const std::shared_ptr<Node> retained_on = retains_grad_node(to);
  to.grad_fn = from.grad_fn();
  to.output_nr = from.output_nr();
  to.set_requires_grad(from.impl()->requires_grad);  // its own flag: set iff it has a history
  if (retained_on) move_retains_grad(to, retained_on);
}

}  // namespace

void mark_view(const Tensor& view, const Tensor& of, const Layout& in_base) {
  TensorImpl& v = *view.impl();
  v.view_base = of.impl()->view_base ? of.impl()->view_base : of.impl();
  v.view_version.store(view.version(), std::memory_order_relaxed);
  v.made_in_no_grad = !grad_enabled() || of.impl()->made_in_no_grad;
  v.multi_output_view = of.impl()->multi_output_view;
  v.view_strides = in_base.strides;
  v.view_offset = in_base.offset;
}

void mark_multi_output_views(const std::vector<Tensor>& views) {
  for (const Tensor& v : views) v.impl()->multi_output_view = true;
}

void check_inplace_on_view(const char* op, const Tensor& t, const Tensor& other) {
  const auto& base = t.impl()->view_base;
  if (!base || !grad_enabled()) return;
  // Note [View flags follow the base]: the write would be recorded.
  AG_CHECK(!(t.impl()->made_in_no_grad && (t.requires_grad() || other.requires_grad())), op, ": ",
           t.describe(),
           " is a view made with grad mode off and cannot be modified in place with grad mode on "
           "by an op that would be recorded; modify a clone() or use a no-grad guard");
  AG_CHECK(!(t.impl()->multi_output_view && (t.requires_grad() || other.requires_grad())), op, ": ",
           t.describe(),
           " is a view returned by split, chunk or unbind (a function that returns several "
           "views), and such views cannot be modified in place while grad mode is on by an op "
           "that would be recorded; replace the in-place op by an out-of-place one, or clone() "
           "the view");
  // As PyTorch's check_inplace: the view requires grad (it was made from a leaf that required
  // grad then, or its base requires grad now) and its base is a leaf.
  AG_CHECK(!(base->grad_fn == nullptr && t.requires_grad()), op, ": ", t.describe(),
           " is a view of a leaf tensor that requires grad and cannot be modified in place "
           "while grad mode is on; modify a clone() or use a no-grad guard");
}

void rebase_history_after_inplace(const Tensor& t, bool recorded) {
  TensorImpl& v = *t.impl();
  // A base, or a view written without a record: its views (and the view itself) notice the new
  // version when next used.
  if (!v.view_base || !recorded) return;
  // t's own history (the in-place node) is current; mark it so before the node below reads it.
  v.view_version.store(t.version(), std::memory_order_relaxed);
  TracePause bookkeeping;  // the nodes below are history, not the program's ops
  const Tensor base(v.view_base);
  // The base absorbs the write (PyTorch's CopySlices)...
  const Tensor rebased = rebased_base(t, base);
  {
    std::lock_guard<std::mutex> lock(v.view_base->autograd_mutex);
    take_history(*v.view_base, rebased);
  }
  // ...and the view is a function of its base again, like every other view of it.
  const Tensor fresh = regenerated_view(base, t);
  std::lock_guard<std::mutex> lock(v.autograd_mutex);
  take_history(v, fresh);
}

void refresh_view(const Tensor& t) {
  if (!t.defined() || !t.impl()->view_base) return;
  TensorImpl& v = *t.impl();
  const Tensor base(v.view_base);
  // As PyTorch's VariableHooks::grad_fn: a view without a history of a base that does not
  // require grad stays a leaf (and stays stale: it regenerates once the base requires grad).
  if (v.grad_fn == nullptr && !base.impl()->requires_grad) return;
  const uint32_t version = t.version();
  if (v.view_version.load(std::memory_order_relaxed) == version) return;
  // Note [View flags follow the base]: as PyTorch, a view made with grad mode off has no history
  // to regenerate from the write, and refuses to make one up.
  AG_CHECK(!v.made_in_no_grad, "a view (", t.describe(),
           ") was made with grad mode off and its base or another view of it has been modified "
           "in place since; its grad_fn and is_leaf cannot be read (make the view after the "
           "write, or clone() it)");
  {
    TracePause bookkeeping;
    // Recorded even when the base no longer requires grad (the view had a history): then the
    // node has no edge, as PyTorch's regenerated AsStridedBackward0.
    const Tensor fresh = regenerated_view(base, t);
    std::lock_guard<std::mutex> lock(v.autograd_mutex);
    take_history(v, fresh);
  }
  v.view_version.store(version, std::memory_order_relaxed);
}

}  // namespace ag::ops
