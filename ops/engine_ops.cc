// What the engine asks of the op set (Note [The engine's ops], engine/engine_ops.h).
#include "engine/engine_ops.h"

#include "engine/grad_mode.h"
#include "ops/ops.h"
#include "ops/trace_hook.h"
#include "ops/views.h"

namespace ag::engine_ops {

Tensor add(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
void add_in_place(Tensor& a, const Tensor& b) { ops::add_(a, b); }
Tensor clone(const Tensor& t) { return ops::clone(t); }
Tensor contiguous_clone(const Tensor& t) { return ops::contiguous_clone(t); }
Tensor clone_for_grad(const Tensor& grad, const Shape* leaf_strides) {
  if (!leaf_strides || !ops::is_non_overlapping_and_dense({grad.shape(), *leaf_strides, 0})) {
    return ops::contiguous_clone(grad);
  }
  return ops::clone_with_strides(grad, *leaf_strides);
}
Tensor to_device(const Tensor& t, Device device) {
  NoGradGuard no_grad;
  return ops::to(t, device);
}
Tensor ones_like(const Tensor& t) { return ops::ones_like(t); }
Tensor zeros_like(const Tensor& t) { return ops::zeros_like(t); }
Tensor zeros(const TensorMeta& meta) { return ops::zeros(meta.shape, meta.dtype, meta.device); }
void refresh_view(const Tensor& view) { ops::refresh_view(view); }
Tensor alias(const Tensor& t) { return ops::alias(t); }
Tensor as_strided(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t offset) {
  return ops::as_strided(t, sizes, strides, offset);
}
void check_inplace_on_view(const char* op, const Tensor& view, bool recorded) {
  ops::check_inplace_on_view(op, view, recorded);
}
void rebase_history_after_write(const Tensor& view) {
  ops::rebase_history_after_inplace(view, /*recorded=*/true);
}
bool tracing() { return ops::trace_hook() != nullptr; }
bool tracing_forward_only() {
  const ops::TraceHook* hook = ops::trace_hook();
  return hook != nullptr && !hook->records_gradients();
}

}  // namespace ag::engine_ops
