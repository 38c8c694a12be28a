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
// regenerates its history as reshape(base, view.shape). So does any write that changes the
// version without recording through the view: one under no_grad, into the base, the view itself
// or a detach() of either (which shares the version counter). As PyTorch, a view regenerates
// when it has a history or its base requires grad; a view of a leaf that requires grad so gets a
// new node after a no-grad write, and a graph built from it before does not reach that node.
// Views of views share one root base. As in PyTorch, a view of a leaf that requires grad cannot
// be modified in place.
//
// Note [View flags follow the base]
// As PyTorch's differentiable views, a view requires grad while its base does: one made under
// no_grad (grad()'s results are often such views of a grad_outputs tensor), and one made before
// requires_grad_() on its base. Such a view without a history of its own is a leaf, but not one
// with an AccumulateGrad (gradient_edge() gives none): gradients through it reach nobody, and
// grad() with respect to it finds it unused. A view made with grad mode off cannot be modified
// in place with grad mode on when the write would be recorded (PyTorch's
// CreationMeta::NO_GRAD_MODE).
//
// Note [Written through a view]
// PyTorch wraps an in-place op on a view in the base's CopySlices node, which drops the op's
// backward when a backward without retain_graph frees the graph, and refuses to run again
// ("Trying to backward through the graph a second time"), whether or not the op saved a value.
// Here two nodes play that part: the base's new history (rebased_base), where the base's
// gradient arrives as it arrives at CopySlices, and behind it the in-place node, which
// finish_inplace() marks when it wrote through a view. Both refuse to run after release_saved().
// Every path to the in-place node passes through the base's new history (the view's own history
// is regenerated from the base), as every path to PyTorch's wrapped op passes through CopySlices;
// the base's node refuses on its own for a backward() whose gradient stops there because no leaf
// behind it wants one (Note [The backward pass]), where PyTorch's CopySlices, reached, refuses.
// CopySlices also writes the op's gradient for self into a copy of the incoming gradient, so under
// create_graph that gradient requires grad when the incoming one does, even from a constant formula
// (copy_'s zeros): OpNode::apply.

// Marks `view` (just made from `of` by reshape) as a view of `of`'s root base.
void mark_view(const Tensor& view, const Tensor& of);

// Throws if grad mode is on and `t` is a view of a leaf that requires grad, or a view made with
// grad mode off that the in-place op (with `other`) would record a node for.
void check_inplace_on_view(const char* op, const Tensor& t, const Tensor& other);

// After an in-place op on `t` (`recorded`: it recorded a node): if t is a view, its base's
// history takes the op and t's history becomes a view of the base.
void rebase_history_after_inplace(const Tensor& t, bool recorded);

// Tensors over the storage of `base` (of `view`) with `shape`, whose history is a node reading
// it, recorded whatever grad mode and its requires_grad() are: a view's regenerated history
// (PyTorch's AsStridedBackward0) and a base's after a write through `view` (CopySlices). Their
// gradients are copied_gradient()s.
Tensor regenerated_view(const Tensor& base, const Shape& shape);
Tensor rebased_base(const Tensor& view, const Shape& shape);

// A new tensor of `shape` holding g's values, recorded (as any op) when g requires grad under
// grad mode; its own gradient is a copied gradient again (shape_ops.cc).
Tensor copied_gradient(const Tensor& g, const Shape& shape);

// If `t` is a view whose base was written since t's history was recorded, regenerate it.
// Cheap when t is not a view or is current.
void refresh_view(const Tensor& t);

}  // namespace ag::ops
