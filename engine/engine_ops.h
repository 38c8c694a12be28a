#pragma once

#include "engine/node.h"
#include "engine/tensor.h"

// Note [The engine's ops]
// The engine sums the gradients that meet at a node with the differentiable add, so that under
// create_graph the sums are recorded too (as PyTorch, tinygrad and autodidax do). It also copies
// gradients into .grad, makes the default ones for a one-element output, and replays a view on
// its base when the base was written (Note [In-place ops on views], ops/views.h). Those few ops
// belong to the op set in ops/; this header is all the engine asks of it, and ops/engine_ops.cc
// implements it. Nothing else in the engine core includes an ops/ header (engine/BUILD's
// core_includes_test checks it); engine/jit and engine/gradcheck use the op set as its other
// clients do, as targets of their own that depend on //ops by name.
namespace ag::engine_ops {

Tensor add(const Tensor& a, const Tensor& b);   // recorded when grad mode is on
void add_in_place(Tensor& a, const Tensor& b);  // a += b; grad mode must be off
Tensor clone(const Tensor& t);                  // recorded when grad mode is on
Tensor contiguous_clone(const Tensor& t);       // the same, contiguous
// A copy of a leaf's first gradient laid out as PyTorch's AccumulateGrad lays out .grad (its
// "layout contract"): with the leaf's strides (`leaf_strides`, null when the leaf is contiguous)
// when the leaf is non-overlapping and dense, else contiguous.
Tensor clone_for_grad(const Tensor& grad, const Shape* leaf_strides);
Tensor to_device(const Tensor& t, Device device);  // a copy on `device`, never recorded
Tensor ones_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor zeros(const TensorMeta& meta);
// Regenerates the history of a view whose base was written since it was recorded.
void refresh_view(const Tensor& view);
// For custom Functions (Note [Custom Function outputs], engine/function.h): a view of `t` over
// all of it (ops::alias), recorded when grad mode is on; the check an in-place op on a view makes
// (Note [How a view was made]); and, once a view was written and given its new history, its
// base's rebase (Note [In-place ops on views]).
Tensor alias(const Tensor& t);
// ops::as_strided, recorded when grad mode is on: a view's tangent read from its base's (Note
// [Tangents of views], engine/forward_ad.cc).
Tensor as_strided(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t offset);
void check_inplace_on_view(const char* op, const Tensor& view, bool recorded);
void rebase_history_after_write(const Tensor& view);
// Whether ops are being traced on this thread (Note [Tracing hook] in ops/trace_hook.h): custom
// Functions refuse to run under any trace (their backward is not an op of the op set).
bool tracing();
// Whether the trace records forward ops only: backward()/grad() refuse to run under it (a trace
// that records gradients too is Note [Tracing gradients], engine/jit/tracer.h).
bool tracing_forward_only();

}  // namespace ag::engine_ops
