#pragma once

#include "engine/tensor.h"

namespace ag::ops {

// Note [In-place ops on views]
// reshape/view return views: tensors sharing their input's storage. An in-place op writes
// through a view into its base too, so the base's history must change as well, or gradients
// flowing through the base would miss the op (PyTorch does this with CopySlices). Our views
// always cover their whole base, so the base's new history is simply
//     base = reshape(view_after_the_op, base.shape)
// and the view then becomes a function of its base again, view = reshape(base, view.shape), so
// that gradients split between a view and its base as in PyTorch (a gradient for the view is
// not one for the base). rebase_history_after_inplace() records both right after the op. Other
// views of the same base (siblings) are now stale: their grad_fn predates the write. Each view
// remembers the storage version its history reflects; refresh_view() notices the mismatch the
// next time the view's autograd state is read (Tensor::requires_grad(), grad_fn(), ...) and
// regenerates its history as reshape(base, view.shape). Views of views share one root base. As
// in PyTorch, a view of a leaf that requires grad cannot be modified in place.
//
// Note [Written through a view]
// PyTorch wraps an in-place op on a view in the base's CopySlices node, which drops the op's
// backward when a backward without retain_graph frees the graph, and refuses to run again
// ("Trying to backward through the graph a second time"), whether or not the op saved a value.
// Here the in-place node itself plays that part: finish_inplace() marks it when it wrote through
// a view, and such a node refuses to run after release_saved(). Every path to it passes through
// the base's new history (the view's own history is regenerated from the base), as every path
// to PyTorch's wrapped op passes through CopySlices.

// Marks `view` (just made from `of` by reshape) as a view of `of`'s root base.
void mark_view(const Tensor& view, const Tensor& of);

// Throws if `t` is a view of a leaf that requires grad and grad mode is on.
void check_inplace_on_view(const char* op, const Tensor& t);

// After an in-place op recorded on `t`: if t is a view, its base's history takes the op and t's
// history becomes a view of the base.
void rebase_history_after_inplace(const Tensor& t);

// If `t` is a view whose base was written since t's history was recorded, regenerate it.
// Cheap when t is not a view or is current.
void refresh_view(const Tensor& t);

}  // namespace ag::ops
