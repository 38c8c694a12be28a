// The gradients of select, slice, diagonal and unfold: PyTorch's select_backward, slice_backward,
// diagonal_backward and unfold_backward, each an op of its own whose gradient is its view op again
// (Note [View gradients differentiate to views]).
#include "engine/memory/shape.h"
#include "ops/batched_jvp.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/spec.h"
#include "ops/view_layout.h"
#include "ops/views.h"

namespace ag::ops {
namespace {

using slots::self;

// Note [View gradients differentiate to views]
// A view op's gradient is the incoming gradient at the view's elements, in zeros of the input's
// shape. PyTorch's derivatives.yaml gives select_backward the derivative `grad.select(dim,
// index)` for its incoming gradient, and slice_backward, diagonal_backward and unfold_backward the
// same with their views: the gradient of a view's gradient is a view of ITS incoming gradient, by
// the view op itself, so it shares the caller's grad_outputs' storage and version counter, and
// made by a grad() without create_graph (grad mode off) it is a view made under no_grad (Note
// [View flags follow the base], Note [How a view was made], ops/views.h): it requires grad while
// its base does, is a leaf, and a write through it under grad mode is refused. The view op's own
// gradient is the backward op again, so orders 3 and up alternate the two, as in PyTorch. The
// view op takes any strides, so any incoming gradient has such a view. The other users of
// view_scatter (as_strided's gradient, a regenerated view's, CopySlices') keep view_gather, a
// copy, as PyTorch's as_strided_backward and CopySlices copy.

// A backward op's attributes: its view op's arguments (dims normalized, bounds clamped, as the
// view op's ViewAttrs hold them), then the view op's input shape, and the layout of the view over
// that shape's elements (where the incoming gradient goes).
OpAttrs backward_attrs(Shape args, const Shape& shape, const Layout& at) {
  args.insert(args.end(), shape.begin(), shape.end());
  return ViewAttrs{std::move(args), at.sizes, at.strides, at.offset};
}

// `g` added into zeros of `shape` at `at`, recorded as `spec`.
Tensor scatter_recorded(const OpSpec& spec, const Tensor& g, const Shape& shape, Shape args,
                        const Layout& at) {
  return record(spec, {&g}, scattered_into_zeros(g, shape, at),
                [&] { return backward_attrs(args, shape, at); });
}

// The spec of the backward op `name` of a view op taking `n` integer arguments: its forward is
// `backward` of the incoming gradient `g`, the arguments `x` and the input `shape`; its gradient
// the view `view` of its incoming gradient `g`.
#define AG_VIEW_BACKWARD_SPEC(Name, name, n, backward, view)              \
  const OpSpec Name{name,                                                 \
                    {{self,                                               \
                      {},                                                 \
                      [](const Ctx& c) {                                  \
                        const Shape& x = c.attrs<ViewAttrs>().args;       \
                        const Tensor& g = c.grad();                       \
                        return view;                                      \
                      }}},                                                \
                    {AliasKind::kPure, ViewAttrs{}, [](const OpArgs& a) { \
                       const Shape& x = a.attrs<ViewAttrs>().args;        \
                       const Tensor& g = a[self];                         \
                       const Shape shape(x.begin() + n, x.end());         \
                       return backward;                                   \
                     }}};                                                 \
  const DeclareJvp Name##_jvp{Name, jvp_linear};
AG_VIEW_BACKWARD_SPEC(kSelectBackward, "select_backward", 2, select_backward(g, shape, x[0], x[1]),
                      select(g, x[0], x[1]))
AG_VIEW_BACKWARD_SPEC(kSliceBackward, "slice_backward", 4,
                      slice_backward(g, shape, x[0], x[1], x[2], x[3]),
                      slice(g, x[0], x[1], x[2], x[3]))
AG_VIEW_BACKWARD_SPEC(kDiagonalBackward, "diagonal_backward", 3,
                      diagonal_backward(g, shape, x[0], x[1], x[2]), diagonal(g, x[0], x[1], x[2]))
AG_VIEW_BACKWARD_SPEC(kUnfoldBackward, "unfold_backward", 3,
                      unfold_backward(g, shape, x[0], x[1], x[2]), unfold(g, x[0], x[1], x[2]))
#undef AG_VIEW_BACKWARD_SPEC

// Note [Batching rules]: the backward op of the rows' tangents into zeros of [B, *shape], at the
// view's dims + 1 (Note [Batched dims], ops/batched_jvp.h; an unfolded 0-dim row is [1]).
Shape batched_input_shape(const JvpContext& c) {
  Shape out = c.result().dim() == 0 ? Shape{1} : c.result().shape();
  out.insert(out.begin(), c.batch());
  return out;
}
const DeclareBatchedJvp select_backward_batched_jvp{
    kSelectBackward, [](const JvpContext& c) {
      const Shape& x = c.attrs<ViewAttrs>().args;
      return select_backward(c.tangent(self), batched_input_shape(c), x[0] + 1, x[1]);
    }};
const DeclareBatchedJvp slice_backward_batched_jvp{
    kSliceBackward, [](const JvpContext& c) {
      const Shape& x = c.attrs<ViewAttrs>().args;
      return slice_backward(c.tangent(self), batched_input_shape(c), x[0] + 1, x[1], x[2], x[3]);
    }};
const DeclareBatchedJvp diagonal_backward_batched_jvp{
    kDiagonalBackward, [](const JvpContext& c) {
      const Shape& x = c.attrs<ViewAttrs>().args;
      return diagonal_backward(c.tangent(self), batched_input_shape(c), x[0], x[1] + 1, x[2] + 1);
    }};
const DeclareBatchedJvp unfold_backward_batched_jvp{
    kUnfoldBackward, [](const JvpContext& c) {
      const Shape& x = c.attrs<ViewAttrs>().args;
      return batched_result(
          c, unfold_backward(c.tangent(self), batched_input_shape(c), x[0] + 1, x[1], x[2]));
    }};

}  // namespace

Tensor select_backward(const Tensor& g, const Shape& shape, int64_t dim, int64_t index) {
  return scatter_recorded(kSelectBackward, g, shape, {dim, index},
                          select_layout(contiguous_layout(shape), dim, index));
}

Tensor slice_backward(const Tensor& g, const Shape& shape, int64_t dim, int64_t start, int64_t end,
                      int64_t step) {
  return scatter_recorded(kSliceBackward, g, shape, {dim, start, end, step},
                          slice_layout(contiguous_layout(shape), dim, start, end, step));
}

Tensor diagonal_backward(const Tensor& g, const Shape& shape, int64_t offset, int64_t dim1,
                         int64_t dim2) {
  return scatter_recorded(kDiagonalBackward, g, shape, {offset, dim1, dim2},
                          diagonal_layout(contiguous_layout(shape), offset, dim1, dim2));
}

Tensor unfold_backward(const Tensor& g, const Shape& shape, int64_t dim, int64_t size,
                       int64_t step) {
  return scatter_recorded(kUnfoldBackward, g, shape, {dim, size, step},
                          unfold_layout(contiguous_layout(shape), dim, size, step));
}

}  // namespace ag::ops
