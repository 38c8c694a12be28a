// Note [In-place ops on views] (ops/views.h).
#include "ops/views.h"

#include <mutex>
#include <string>

#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/hooks.h"
#include "engine/node.h"
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

void mark_view(const Tensor& view, const Tensor& of, const Layout& in_base, bool over_storage) {
  TensorImpl& v = *view.impl();
  const TensorImpl& input = *of.impl();
  v.view_base = input.view_base ? input.view_base : of.impl();
  v.forward_base = input.forward_root ? of.impl() : input.forward_base;  // Note [Tangents of views]
  v.view_version.store(view.version(), std::memory_order_relaxed);
  // Note [How a view was made]: a view made with grad mode on is made as its input was.
  v.creation_meta = !grad_enabled()   ? CreationMeta::kNoGradMode
                    : input.view_base ? input.creation_meta
                                      : CreationMeta::kDefault;
  v.view_strides = in_base.strides;
  v.view_offset = in_base.offset;
  // Note [Views over a root's storage]
  v.view_over_storage = over_storage || (input.view_base && input.view_over_storage);
}

void mark_multi_output_views(const std::vector<Tensor>& views) {
  if (!grad_enabled()) return;  // made with grad mode off, which they stay
  for (const Tensor& v : views) v.impl()->creation_meta = CreationMeta::kMultiOutputNode;
}

void refuse_view_write(const char* op, const Tensor& t) {
  const CreationMeta how = t.impl()->creation_meta;
  const std::shared_ptr<Node> history = t.history_as_it_stands();
  std::string what = op ? std::string(op) + ": " : std::string();
  if (history) {
    what += "output " + std::to_string(t.impl()->output_nr) + " of '" + history->name() + "' (" +
            t.describe() + ") is a view";
  } else {
    what += t.describe() + " is a view";
  }
  // As PyTorch, a view without a history was made with grad mode off, whatever else it is.
  const bool no_grad = how == CreationMeta::kNoGradMode || !history;
  if (no_grad) what += history ? " of a view made with grad mode off" : " made with grad mode off";
  what += op ? (no_grad ? " and is being modified in place with grad mode on"
                        : " and is being modified in place")
             : " and its base or another view of its base has been modified in place since";
  switch (how) {
    case CreationMeta::kNoGradMode:
      what +=
          ". This is ambiguous and so forbidden: make both the view and the in-place op under the "
          "no-grad guard (if the write is not to be recorded) or both outside it (if it is), or "
          "modify a clone()";
      break;
    case CreationMeta::kMultiOutputNode:
      what +=
          ". This view is one of several views that one function returned (split, chunk or "
          "unbind, or a custom Function), and such views cannot be modified in place: replace "
          "the in-place op by an out-of-place one, or clone() the view";
      break;
    case CreationMeta::kInCustomFunction:
      what +=
          ". This view was created inside a custom Function (or because an input was returned "
          "as-is) and the autograd logic to handle view+inplace would override the custom "
          "backward associated with the custom Function, leading to incorrect gradients. This "
          "is forbidden: clone() the output of the custom Function";
      break;
    case CreationMeta::kDefault:
      break;
  }
  if (!op) what += " (its history cannot be read)";
  fail(what);
}

void check_inplace_on_view(const char* op, const Tensor& t, bool recorded) {
  const auto& base = t.impl()->view_base;
  if (!base || !grad_enabled() || !recorded) return;
  // Note [How a view was made]: only a view made by a view op with grad mode on may take a write
  // that is recorded.
  if (t.impl()->creation_meta != CreationMeta::kDefault) refuse_view_write(op, t);
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
  // Note [How a view was made]: as PyTorch, only a view made by a view op with grad mode on has a
  // history to regenerate; the others refuse to make one up.
  if (v.creation_meta != CreationMeta::kDefault) refuse_view_write(nullptr, t);
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
