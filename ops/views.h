#pragma once

#include <vector>

#include "engine/tensor.h"
#include "ops/view_layout.h"

namespace ag::ops {

class BackwardContext;  // ops/spec.h

// Note [In-place ops on views]
// The view ops (ops/view_ops.cc, broadcast_to among them, reshape, view) return views: tensors
// sharing their input's storage. An in-place op writes through a view into its base too, so the
// base's history must change as well, or gradients flowing through the base would miss the op
// (PyTorch does this with CopySlices). The base's new history (rebased_base) takes the base's
// gradient and sends the part where the view reads the base to the view after the op, the rest to
// the base's history before the write (Note [Views of any stride]); a view that reads its whole
// base in order (a reshape) sends all of it to the view. The view then becomes a function of its
// base again, view = as_strided(base) (PyTorch's AsStridedBackward0), so that gradients split
// between a view and its base as in PyTorch (a gradient for the view is not one for the base).
// rebase_history_after_inplace() records both right after the op. Other views of the same base
// (siblings) are now stale: their grad_fn predates the write. Each view remembers the storage
// version its history reflects; refresh_view() notices the mismatch the next time the view's
// autograd state is read (Tensor::requires_grad(), grad_fn(), ...) and regenerates its history
// as as_strided(base) at the view's layout. So does any write that changes the
// version without recording through the view: one under no_grad, into the base, the view itself
// or a detach() of either (which shares the version counter). As PyTorch, a view regenerates
// when it has a history or its base requires grad; a view of a leaf that requires grad so gets a
// new node after a no-grad write, and a graph built from it before does not reach that node.
// Views of views share one root base. As in PyTorch, a view of a leaf that requires grad cannot
// be modified in place.
//
// Note [Views of any stride]
// A view keeps where it reads its root base (TensorImpl::view_strides, view_offset): strides and
// an offset over the base's elements in row-major order, which is the layout of the base's
// gradient. A view may read an element twice (expand, broadcast_to: stride 0), and an in-place
// op on such a view is refused (Note [Overlapping writes], ops/inplace.cc), as in PyTorch.
// Every view op is a function from its input's layout to its result's (ops/
// view_layout.h), and applying it to the input's layout over the root gives the result's: so a
// view of a view of a view is one layout over the root, however it was made. With it, the three
// histories that views need are each one linear op over a base-shaped gradient: a view's
// gradient is view_scatter (the incoming gradient added at the view's elements, into zeros of
// the input's shape: as_strided_backward in PyTorch; select's, slice's, diagonal's and unfold's
// are the same values by ops of their own, PyTorch's select_backward..., whose gradients are
// views: Note [View gradients differentiate to views], ops/view_backward.cc); the part
// of a base's gradient that a write through a view took over is view_gather (the elements at
// the view, as the view's shape); the part it left to the base's old history is view_zeroed (the
// gradient with zeros at the view). Each one's derivative is another of them, so gradients
// through views differentiate to any order. Every view op's node reads its layout over its own
// input (ViewAttrs) rather than over the root: the gradient goes to the input.
//
// Note [Views over a root's storage]
// as_strided reads the storage, and over a root that is not contiguous (an elementwise result
// laid out as its transposed operand, a detach() of a view) its result need not be any strided
// layout over the root's row-major elements: as_strided([3], [1], 1) of a [2, 3] root with
// strides [1, 2] reads its elements 3, 1, 4. Such a view keeps its layout over the root's
// storage, from the root's storage offset, as PyTorch keeps every view's
// (TensorImpl::view_over_storage); so do the views made of it, by the same layout functions. Its
// two histories go through the storage, as PyTorch's: a regenerated one is as_strided_backward
// from the root's layout (as_strided_gradient), and a write through it sends the base's gradient
// into storage at the root's layout and takes it back at the view's (PyTorch's CopySlices'
// new_empty_strided(base) and as_strided(view)), both made of the three linear ops, so they too
// differentiate to any order. Forward mode reads such a view's tangent from its root's tangent
// at the same storage layout, which needs that tangent to have the root's strides; one that has
// others is refused.
//
// Note [View flags follow the base]
// As PyTorch's differentiable views, a view requires grad while its base does: one made under
// no_grad (grad()'s results are often such views of a grad_outputs tensor: the gradients of sum,
// sum over a dim and sum_to expand it, with stride 0, as PyTorch's formulas; broadcast_to's and
// expand's sum it back, a view of that sum where it drops leading dims; mean's is a new tensor),
// and one made before requires_grad_() on its base. Such a view without a history of its own is
// a leaf, but not one with an AccumulateGrad (gradient_edge() gives none): gradients through it
// reach nobody, and grad() with respect to it finds it unused. A view made with grad mode off
// cannot be modified in place with grad mode on when the write would be recorded (Note [How a
// view was made]).
//
// Note [How a view was made]
// A view made by a view op with grad mode on has a history that a write can rewrite (Note
// [In-place ops on views]). Three other kinds of views, PyTorch's CreationMeta
// (TensorImpl::creation_meta), have none that can be rewritten correctly, and refuse a write
// through them that would be recorded (check_inplace_on_view) and, once their base or a sibling
// was written, any reading of their history (refresh_view), with PyTorch's messages
// (refuse_view_write):
// - kNoGradMode: made with grad mode off, so whether a write through it is to be recorded is
//   ambiguous.
// - kMultiOutputNode: one of the views that split, chunk or unbind (or a custom Function with
//   several differentiable outputs) returned; one output's write cannot rewrite the node that
//   made them all.
// - kInCustomFunction: an output of a custom Function that is a view: made inside its forward,
//   or an input the forward returned as is, which the Function returns as a new view of it
//   (PyTorch's view_as(self)), so that the input keeps its own history and the output gets the
//   Function's node. Rebasing such a view's history onto its base would drop the Function's
//   backward, and with it the gradient the user wrote (a write into the input after
//   `o = Ident(a)` would make o's gradient flow through the write, not through Ident; Note
//   [Custom Function outputs], engine/function.h).
// A view of such a view, made with grad mode on, is of its input's kind (PyTorch's
// propagate_creation_meta); one made with grad mode off is kNoGradMode. As in PyTorch, the
// message calls a view without a history one made with grad mode off, whatever its kind.
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

// Marks `view` (just made from `of` by a view op) as a view of `of`'s root base, reading it at
// `in_base` (Note [Views of any stride]).
// `over_storage`: `in_base` is over the root's storage (Note [Views over a root's storage]),
// as it is for every view of a view that is.
void mark_view(const Tensor& view, const Tensor& of, const Layout& in_base,
               bool over_storage = false);
// Marks the outputs of one split, chunk or unbind, made with grad mode on, as kMultiOutputNode
// (Note [How a view was made]; Note [Several views, one node], ops/split.cc).
void mark_multi_output_views(const std::vector<Tensor>& views);
// Where `t` reads its storage: its sizes, strides and storage offset.
inline Layout layout_of(const Tensor& t) {
  return Layout{t.shape(), t.strides(), t.storage_offset()};
}
// Where `t` reads its root base (its own row-major layout when it is not a view).
Layout layout_in_base(const Tensor& t);
// Where a tensor `root` that is no view reads its own storage, from its storage offset: the
// layout that views over its storage are read through (Note [Views over a root's storage]).
inline Layout storage_layout_of_root(const Tensor& root) {
  return Layout{root.shape(), root.strides(), 0};
}
// PyTorch's as_strided_backward: the gradient of an as_strided result at `result` read by an
// input at `input`, both over one storage (Note [as_strided gradients of overlapping inputs],
// ops/view_ops.cc).
Tensor as_strided_gradient(const Tensor& grad, const Layout& input, const Layout& result);

// Throws if grad mode is on, the in-place op `op` on `t` would be `recorded`, and `t` is a view
// of a leaf that requires grad or one made other than by a view op with grad mode on (Note [How
// a view was made]).
void check_inplace_on_view(const char* op, const Tensor& t, bool recorded);
// The same for an op on `t` and `other`, recorded when either requires grad (read only when `t` is
// a view).
inline void check_inplace_on_view(const char* op, const Tensor& t, const Tensor& other) {
  if (t.is_view()) check_inplace_on_view(op, t, t.requires_grad() || other.requires_grad());
}
// Throws PyTorch's error for a view `t` that is not kDefault (Note [How a view was made]): `op`
// writes through it, or (`op` null) its history is read after a write into its base.
[[noreturn]] void refuse_view_write(const char* op, const Tensor& t);

// After an in-place op on `t` (`recorded`: it recorded a node): if t is a view, its base's
// history takes the op and t's history becomes a view of the base.
void rebase_history_after_inplace(const Tensor& t, bool recorded);

// Tensors over the storage of `base` (of `view`) at its layout, whose history is a node reading
// it, recorded whatever grad mode and its requires_grad() are: a view's regenerated history
// (PyTorch's AsStridedBackward0) and a base's after a write through `view` (CopySlices). Their
// gradients are in new storage (Note [Views of any stride]). `written`: the view is what a write
// reads as its self (Note [A write's self keeps the write's history], ops/shape_ops.cc).
Tensor regenerated_view(const Tensor& base, const Tensor& view, bool written = false);
Tensor rebased_base(const Tensor& view, const Tensor& base);

// The three linear ops of Note [Views of any stride], recorded (as any op) when their input
// requires grad under grad mode. `at` is a layout over the elements of a tensor of `shape` (of
// t's, of g's) in row-major order.
Tensor view_scatter(const Tensor& g, const Shape& shape, const Layout& at);
// view_scatter's values, not recorded: `g` added into zeros of `shape` at `at`.
Tensor scattered_into_zeros(const Tensor& g, const Shape& shape, const Layout& at);
Tensor view_gather(const Tensor& t, const Layout& at);
Tensor view_zeroed(const Tensor& g, const Layout& at);
// The gradients of select, slice, diagonal and unfold: `g` added into zeros of `shape` where the
// view op with these arguments (dims normalized, bounds clamped, as its ViewAttrs hold them) reads
// an input of that shape; each one's own gradient is its view op (Note [View gradients
// differentiate to views], ops/view_backward.cc).
Tensor select_backward(const Tensor& g, const Shape& shape, int64_t dim, int64_t index);
Tensor slice_backward(const Tensor& g, const Shape& shape, int64_t dim, int64_t start, int64_t end,
                      int64_t step);
Tensor diagonal_backward(const Tensor& g, const Shape& shape, int64_t offset, int64_t dim1,
                         int64_t dim2);
Tensor unfold_backward(const Tensor& g, const Shape& shape, int64_t dim, int64_t size,
                       int64_t step);
// A view's gradient added into the gradient already waiting for its input, at the view's elements
// alone, where the sum allows (Note [View gradients into a waiting sum], ops/view_ops.cc): the
// fusion hook of the views that reach each element of their input at most once, whose attributes
// are ViewAttrs with the layout over the input's elements.
bool add_view_gradient_into(const Tensor& sum, const BackwardContext& c);
// Writes zeros at `at` over the contiguous tensor `t`, in place, unrecorded: view_zeroed's write.
void zero_at(const Tensor& t, const Layout& at);

// A new tensor of `shape` holding g's values, recorded (as any op) when g requires grad under
// grad mode; its own gradient is a copied gradient again (shape_ops.cc).
Tensor copied_gradient(const Tensor& g, const Shape& shape);

// If `t` is a view whose base was written since t's history was recorded, regenerate it.
// Cheap when t is not a view or is current.
void refresh_view(const Tensor& t);

}  // namespace ag::ops
