// reshape and view: views where the strides allow one (they share storage, and so the version
// counter), else reshape copies; and the histories of views and bases that in-place writes make.
#include "engine/error.h"
#include "ops/backend.h"
#include "ops/batched_jvp.h"
#include "ops/checks.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/spec.h"
#include "ops/views.h"

namespace ag::ops {
namespace {

struct Reshape {
  static constexpr Input self{0, "self"};
  static const OpSpec spec;
};
const OpSpec Reshape::spec{
    "reshape",
    {{self, {}, [](const Ctx& c) { return reshape(c.grad(), c.input_shape(self)); }}},
    {AliasKind::kView, ShapeAttrs{},
     [](const OpArgs& a) { return reshape(a[self], a.attrs<ShapeAttrs>().shape); }}};
const DeclareJvp reshape_jvp{Reshape::spec, jvp_linear};
const DeclareBatchedJvp reshape_batched_jvp{Reshape::spec, batched_as_reshape};

// The histories an in-place op gives views and bases (Note [In-place ops on views]): a view
// regenerated from its base is PyTorch's AsStridedBackward0, a base written through a view its
// CopySlices. Their gradients are copied_gradient()s (for a regenerated view, a view of one, as
// PyTorch's): new storage, never the incoming gradient's, so a gradient through them neither
// shares memory with the caller's grad_outputs nor, made without create_graph, requires grad
// through them. A zero-size view's gradient is plain zeros, which never require grad (Note
// [Zero-size as_strided gradients], ops/view_ops.cc), except where a write reads the view as its
// self (Note [A write's self keeps the write's history]). No forward: none of the three is an op of
// the JIT.
struct RegeneratedView {
  static constexpr Input self{0, "self"};
  static const OpSpec spec;
};

// The gradient where the view reads its base, in new storage, and a view of it, as
// as_strided_backward's result is a view of the storage it fills. A view over its root's storage
// has the root's strides in `args` (Note [Views over a root's storage]).
Tensor regenerated_view_gradient(const Ctx& c) {
  const Tensor& g = c.grad();
  const Shape& shape = c.input_shape(RegeneratedView::self);
  const auto& attrs = c.attrs<ViewAttrs>();
  if (!attrs.args.empty()) return as_strided_gradient(g, {shape, attrs.args, 0}, attrs.layout());
  if (g.numel() == 0) return zeros(shape, g.dtype(), g.device());
  return reshape(view_scatter(g, shape, attrs.layout()), shape);
}
// Its gradient is a view's, so it joins a waiting sum as select's does (Note [View gradients into
// a waiting sum], ops/view_ops.cc) where its layout is over the base's elements and reads each at
// most once: a write through a view reads self through one of these (ops/inplace.cc).
bool add_regenerated_view_gradient_into(const Tensor& sum, const Ctx& c) {
  const auto& attrs = c.attrs<ViewAttrs>();
  if (!attrs.args.empty() || has_internal_overlap(attrs.layout())) return false;
  return add_view_gradient_into(sum, c);
}
const OpSpec RegeneratedView::spec{
    "regenerated_view",
    {{self, {}, regenerated_view_gradient, add_regenerated_view_gradient_into}}};

// Note [A write's self keeps the write's history]
// The view an in-place op reads as its self (self_of_write, ops/inplace.cc) is a regenerated
// view with one difference, at zero size: PyTorch's CopySlices copies the op's gradient for self
// into a clone of the base's gradient (result_slice.copy_(res)), so under create_graph the base's
// gradient has that gradient's history even where the copy moves no element. Plain zeros, the
// regenerated view's zero-size gradient (AsStridedBackward0's), would drop it: a grad() through a
// write into a zero-size view would not require grad where PyTorch's does.
struct WrittenView {
  static constexpr Input self{0, "self"};
  static const OpSpec spec;
};
Tensor written_view_gradient(const Ctx& c) {
  const Tensor& g = c.grad();
  if (g.numel() != 0) return regenerated_view_gradient(c);
  const Shape& shape = c.input_shape(WrittenView::self);
  return reshape(view_scatter(g, shape, contiguous_layout(g.shape())), shape);
}
const OpSpec WrittenView::spec{
    "regenerated_view", {{self, {}, written_view_gradient, add_regenerated_view_gradient_into}}};

struct RebasedBase {
  static constexpr Input view{0, "view"};
  static const OpSpec spec;
};
const OpSpec RebasedBase::spec{
    "rebased_base",
    {{view, {}, [](const Ctx& c) { return copied_gradient(c.grad(), c.input_shape(view)); }}}};

// The base's history after a write through a view that reads only part of it, or reads it out of
// order: PyTorch's CopySlices. The base's gradient goes to its history before the write, with
// zeros where the view reads it, and the view's part goes to the write (Note [Views of any
// stride]). The view's formula comes first, so that the base's, the last to read the incoming
// gradient, may zero the view's elements in it in place (Note [Formulas in the incoming
// gradient], ops/spec.h).
struct CopySlices {
  static constexpr Input view{0, "view"}, base{1, "base"};
  static const OpSpec spec;
};
// PyTorch's CopySlices copies the write's gradient for self into the view's elements of the
// gradient, which refuses a view that reaches one element at several indices (an expanded view,
// written by copy_ from its own elements: Note [Overlapping writes]).
// `what` names the layout in the error: the view written, or the base written through it.
Layout refuse_internal_overlap(const Layout& at, const char* what) {
  AG_CHECK(!has_internal_overlap(at),
           "copy_slices: unsupported operation: more than one element of the written-to "
           "tensor refers to a single memory location (",
           what, ", strides ", to_string(at.strides), "). Please clone() the tensor first.");
  return at;
}
Layout written_layout(const Ctx& c) {
  return refuse_internal_overlap(c.attrs<ViewAttrs>().layout(), "the view written in place");
}
// A view over its root's storage has the root's strides in `args` (Note [Views over a root's
// storage]): the base's gradient goes into storage at the root's layout (PyTorch's
// new_empty_strided(base) and copy_), and comes back from it at the view's, or, zeroed there, at
// the root's.
Layout root_layout(const Ctx& c) {
  return refuse_internal_overlap({c.input_shape(CopySlices::base), c.attrs<ViewAttrs>().args, 0},
                                 "the base written through a view");
}
Tensor base_gradient_in_storage(const Ctx& c) {
  const Layout root = root_layout(c);
  return view_scatter(c.grad(), {storage_extent(root)}, root);
}
const OpSpec CopySlices::spec{"copy_slices",
                              {{view,
                                {},
                                [](const Ctx& c) {
                                  const Layout at = c.attrs<ViewAttrs>().layout();
                                  if (c.attrs<ViewAttrs>().args.empty())
                                    return view_gather(c.grad(), at);
                                  return view_gather(base_gradient_in_storage(c), at);
                                }},
                               {base,
                                {},
                                [](const Ctx& c) {
                                  const Layout at = written_layout(c);
                                  if (c.attrs<ViewAttrs>().args.empty())
                                    return view_zeroed(c.grad(), at);
                                  return view_gather(view_zeroed(base_gradient_in_storage(c), at),
                                                     root_layout(c));
                                },
                                nullptr,
                                [](const Tensor& grad, const Ctx& c) {
                                  if (!c.attrs<ViewAttrs>().args.empty()) return false;
                                  zero_at(grad, written_layout(c));
                                  return true;
                                }}}};

// The gradient of a copied gradient is a copied gradient again, to any order: PyTorch's
// as_strided_backward and CopySlices write the incoming gradient into new storage, and so
// does their own derivative (a clone before CopySlices' formula, a fresh as_strided_backward).
struct CopiedGradient {
  static constexpr Input self{0, "self"};
  static const OpSpec spec;
};
const OpSpec CopiedGradient::spec{
    "copied_gradient",
    {{self, {}, [](const Ctx& c) { return copied_gradient(c.grad(), c.input_shape(self)); }}}};
// Linear: the tangent copied alike (the op has no forward of its own for jvp_linear to call).
const DeclareJvp copied_gradient_jvp{CopiedGradient::spec, [](const JvpContext& c) {
                                       return copied_gradient(c.tangent(CopiedGradient::self),
                                                              c.result().shape());
                                     }};
const DeclareBatchedJvp copied_gradient_batched_jvp{CopiedGradient::spec, [](const JvpContext& c) {
                                                      Shape shape = c.result().shape();
                                                      shape.insert(shape.begin(), c.batch());
                                                      return copied_gradient(
                                                          c.tangent(CopiedGradient::self), shape);
                                                    }};

// Resolves one -1 entry and checks the element count.
Shape infer_shape(const Tensor& a, const Shape& requested) {
  Shape shape = requested;
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      AG_CHECK(infer_at < 0, "reshape: only one dimension can be -1, got ", to_string(requested));
      infer_at = static_cast<int>(i);
    } else {
      AG_CHECK(shape[i] >= 0, "reshape: invalid shape ", to_string(requested));
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    AG_CHECK(known > 0 && a.numel() % known == 0, "reshape: shape ", to_string(requested),
             " is invalid for input ", a.describe());
    shape[infer_at] = a.numel() / known;
  }
  AG_CHECK(numel(shape) == a.numel(), "reshape: shape ", to_string(requested),
           " is invalid for input ", a.describe(), " (", a.numel(), " elements)");
  return shape;
}

// The view of `a` with `shape` (resolved), if the strides allow one (PyTorch's computeStride),
// both over the storage and over a's root base (Note [Views of any stride]).
bool try_view(const Tensor& a, const Shape& shape, Tensor* out) {
  Layout actual, in_base;
  if (!reshape_layout(layout_of(a), shape, &actual) ||
      !reshape_layout(layout_in_base(a), shape, &in_base)) {
    return false;
  }
  *out = record(Reshape::spec, {&a}, a.alias_with_layout(shape, actual.strides, actual.offset),
                [&] { return ShapeAttrs{shape}; });
  mark_view(*out, a, in_base);  // Note [In-place ops on views]
  return true;
}

}  // namespace

Tensor reshape(const Tensor& a, const Shape& shape) {
  check_defined("reshape", a, "input");
  Shape resolved = infer_shape(a, shape);
  Tensor out;
  if (try_view(a, resolved, &out)) return out;
  // As PyTorch's reshape: a copy where no view exists (its _unsafe_view: not a view).
  const Tensor copy = contiguous(a);
  return record(Reshape::spec, {&copy}, copy.alias_with_shape(resolved),
                [&] { return ShapeAttrs{resolved}; });
}

Tensor view(const Tensor& a, const Shape& shape) {
  check_defined("view", a, "input");
  Shape resolved = infer_shape(a, shape);
  Tensor out;
  AG_CHECK(try_view(a, resolved, &out),
           "view: view size is not compatible with input tensor's size and stride (at least one "
           "dimension spans across two contiguous subspaces). Use .reshape(...) instead. (size ",
           to_string(resolved), " of ", a.describe(), ", strides ", to_string(a.strides()), ")");
  return out;
}

namespace {
// The root's strides where the view's layout is over its storage (Note [Views over a root's
// storage]), else none: the attribute args of the view's two histories.
Shape root_strides_if_over_storage(const Tensor& view, const Tensor& base) {
  return view.impl()->view_over_storage ? base.strides() : Shape{};
}
}  // namespace

Tensor regenerated_view(const Tensor& base, const Tensor& view, bool written) {
  const Layout at = layout_in_base(view);
  return record_node(
      written ? WrittenView::spec : RegeneratedView::spec, {&base},
      base.alias_with_layout(view.shape(), view.strides(), view.storage_offset()),
      ViewAttrs{root_strides_if_over_storage(view, base), at.sizes, at.strides, at.offset}, {});
}

Tensor copied_gradient(const Tensor& g, const Shape& shape) {
  return record(CopiedGradient::spec, {&g}, copy_of(g).alias_with_shape(shape));
}

Tensor rebased_base(const Tensor& view, const Tensor& base) {
  const Layout at = layout_in_base(view);
  const Tensor rebased =
      base.alias_with_layout(base.shape(), base.strides(), base.storage_offset());
  // A view that reads its whole base in order (a reshape) stands for all of it; any other leaves
  // the rest of the base's gradient to the base's history before the write.
  const Shape root_strides = root_strides_if_over_storage(view, base);
  const bool whole = root_strides.empty()
                         ? is_contiguous(at) && at.offset == 0 && view.numel() == base.numel()
                         : same_elements(at, storage_layout_of_root(base));
  // PyTorch's CopySlices first copies the base's gradient into new storage at the base's strides
  // (new_empty_strided, copy_), which refuses a base that reaches one element at several indices
  // (an expanded base, detached): its backward raises, whatever the view written, even one of no
  // elements. The base's strides as the storage's make root_layout() refuse it the same way.
  const Shape storage_strides =
      has_internal_overlap(layout_of(base)) ? base.strides() : root_strides;
  Tensor out = whole ? record_node(RebasedBase::spec, {&view}, rebased, NoAttrs(), {})
                     : record_node(CopySlices::spec, {&view, &base}, rebased,
                                   ViewAttrs{storage_strides, at.sizes, at.strides, at.offset}, {});
  // Note [Written through a view]: the base's node is where a backward's gradient for the base
  // arrives, as at CopySlices, so it refuses to run again once a backward has freed it, also
  // where that backward's gradient goes no further (backward() when no leaf behind it wants one).
  static_cast<OpNode&>(*out.grad_fn()).mark_freed_whole_on_release();
  return out;
}

}  // namespace ag::ops
