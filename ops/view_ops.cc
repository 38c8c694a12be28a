// The view ops: results that share their input's storage and version counter, with any strides
// (Note [Strided tensors], engine/tensor.h; Note [Views of any stride], ops/views.h). Each op is
// its layout function (ops/view_layout.h) applied to its input; reshape and view are in
// shape_ops.cc. The gradients of the views and of the nodes that writes through views record
// (Note [In-place ops on views]) are the three linear ops at the end of this file.
#include <algorithm>
#include <utility>

#include "engine/counters.h"
#include "engine/error.h"
#include "ops/backend.h"
#include "ops/batched_jvp.h"
#include "ops/checks.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/spec.h"
#include "ops/view_layout.h"
#include "ops/views.h"

namespace ag::ops {
namespace {

using slots::self;

// The gradients of select, slice, diagonal and unfold: the incoming gradient where the view reads
// its input, in zeros of the input's shape, by PyTorch's backward ops, whose own gradients are
// views of theirs (Note [View gradients differentiate to views], ops/view_backward.cc).
Tensor select_gradient(const Ctx& c) {
  const Shape& x = c.attrs<ViewAttrs>().args;
  return select_backward(c.grad(), c.input_shape(self), x[0], x[1]);
}
Tensor slice_gradient(const Ctx& c) {
  const Shape& x = c.attrs<ViewAttrs>().args;
  return slice_backward(c.grad(), c.input_shape(self), x[0], x[1], x[2], x[3]);
}
Tensor diagonal_gradient(const Ctx& c) {
  const Shape& x = c.attrs<ViewAttrs>().args;
  return diagonal_backward(c.grad(), c.input_shape(self), x[0], x[1], x[2]);
}
Tensor unfold_gradient(const Ctx& c) {
  const Shape& x = c.attrs<ViewAttrs>().args;
  return unfold_backward(c.grad(), c.input_shape(self), x[0], x[1], x[2]);
}

// The gradients that are views of the incoming gradient, as PyTorch's formulas make them: permute's
// is the inverse permute (PyTorch's permute_backwards), unsqueeze's a squeeze, squeeze's an
// unsqueeze of each dim it dropped (unsqueeze_to: the gradient itself where it dropped none), and
// alias's the gradient itself. So a grad() result is a view of a grad_outputs tensor (and
// requires grad while that does, Note [View flags follow the base]), or that very tensor, as in
// PyTorch.
Tensor permute_gradient(const Ctx& c) {
  const Shape& order = c.attrs<ViewAttrs>().args;
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[static_cast<size_t>(order[i])] = int64_t(i);
  return permute(c.grad(), inverse);
}
Tensor unsqueeze_gradient(const Ctx& c) { return squeeze(c.grad(), c.attrs<ViewAttrs>().args[0]); }
Tensor squeeze_gradient(const Ctx& c) {
  const Shape& in = c.input_shape(self);
  const Shape& args = c.attrs<ViewAttrs>().args;
  Tensor g = c.grad();
  for (size_t d = 0; d < in.size(); ++d) {
    const bool dropped = in[d] == 1 && (args.empty() || args[0] == static_cast<int64_t>(d));
    if (dropped) g = unsqueeze(g, static_cast<int64_t>(d));
  }
  return g;
}
Tensor alias_gradient(const Ctx& c) { return c.grad(); }

// The spec of a view op `name` whose function takes (tensor, args...) as `forward` reads them,
// with the gradient `gradient` and its fusion hook `fuse` (or nullptr); its jvp rule is
// jvp_linear (AG_VIEW_SPEC) or its own (AG_VIEW_SPEC_OWN_JVP).
#define AG_VIEW_SPEC_OWN_JVP(Name, name, gradient, fuse, forward)                               \
  const OpSpec Name{                                                                            \
      name, {{self, {}, gradient, fuse}}, {AliasKind::kView, ViewAttrs{}, [](const OpArgs& a) { \
                                             [[maybe_unused]] const Shape& x =                  \
                                                 a.attrs<ViewAttrs>().args;                     \
                                             return forward;                                    \
                                           }}};
#define AG_VIEW_SPEC(Name, name, gradient, fuse, forward)   \
  AG_VIEW_SPEC_OWN_JVP(Name, name, gradient, fuse, forward) \
  const DeclareJvp Name##_jvp{Name, jvp_linear};
AG_VIEW_SPEC(kSelect, "select", select_gradient, add_view_gradient_into,
             select(a[self], x[0], x[1]))
AG_VIEW_SPEC(kSlice, "slice", slice_gradient, add_view_gradient_into,
             slice(a[self], x[0], x[1], x[2], x[3]))
AG_VIEW_SPEC(kPermute, "permute", permute_gradient, nullptr,
             permute(a[self], std::vector<int64_t>(x.begin(), x.end())))
AG_VIEW_SPEC(kUnsqueeze, "unsqueeze", unsqueeze_gradient, nullptr, unsqueeze(a[self], x[0]))
AG_VIEW_SPEC(kSqueeze, "squeeze", squeeze_gradient, nullptr,
             x.empty() ? squeeze(a[self]) : squeeze(a[self], x[0]))
AG_VIEW_SPEC(kDiagonal, "diagonal", diagonal_gradient, add_view_gradient_into,
             diagonal(a[self], x[0], x[1], x[2]))
AG_VIEW_SPEC(kUnfold, "unfold", unfold_gradient, nullptr, unfold(a[self], x[0], x[1], x[2]))
AG_VIEW_SPEC_OWN_JVP(kAlias, "alias", alias_gradient, nullptr, alias(a[self]))
// As PyTorch's (`result: self_t`): the alias carries its input's very tangent, where the other
// view ops carry a view of it (found by the conformance corpus, corpus/forward.txt).
const DeclareJvp kAlias_jvp{kAlias, [](const JvpContext& c) { return c.tangent(self); }};
const DeclareBatchedJvp kAlias_batched_jvp{kAlias, kAlias.jvp()};
#undef AG_VIEW_SPEC

// Note [Batching rules]: the view ops' batching rules are the same views of the tangent, past its
// batch dim.
int64_t dim_in(const JvpContext& c, int64_t dim) {
  return dim < 0 ? dim + c.primal(self).dim() : dim;
}
const DeclareBatchedJvp unsqueeze_batched_jvp{kUnsqueeze, batched_as_reshape};
const DeclareBatchedJvp squeeze_batched_jvp{kSqueeze, batched_as_reshape};
const DeclareBatchedJvp select_batched_jvp{kSelect, [](const JvpContext& c) {
                                             const Shape& x = c.attrs<ViewAttrs>().args;
                                             return select(c.tangent_or_zeros(self),
                                                           dim_in(c, x[0]) + 1, x[1]);
                                           }};
const DeclareBatchedJvp slice_batched_jvp{kSlice, [](const JvpContext& c) {
                                            const Shape& x = c.attrs<ViewAttrs>().args;
                                            return slice(c.tangent_or_zeros(self),
                                                         dim_in(c, x[0]) + 1, x[1], x[2], x[3]);
                                          }};
const DeclareBatchedJvp diagonal_batched_jvp{
    kDiagonal, [](const JvpContext& c) {
      const Shape& x = c.attrs<ViewAttrs>().args;
      return diagonal(c.tangent_or_zeros(self), x[0], dim_in(c, x[1]) + 1, dim_in(c, x[2]) + 1);
    }};
// A 0-dim row unfolds as [1] (Note [Batched dims], ops/batched_jvp.h).
const DeclareBatchedJvp unfold_batched_jvp{
    kUnfold, [](const JvpContext& c) {
      const Shape& x = c.attrs<ViewAttrs>().args;
      const Tensor t = batched_at_least_1d(c.tangent_or_zeros(self));
      return batched_result(c, unfold(t, dim_in(c, x[0]) + 1, x[1], x[2]));
    }};
const DeclareBatchedJvp permute_batched_jvp{kPermute, [](const JvpContext& c) {
                                              std::vector<int64_t> dims = {0};
                                              for (int64_t d : c.attrs<ViewAttrs>().args) {
                                                dims.push_back(dim_in(c, d) + 1);
                                              }
                                              return permute(c.tangent_or_zeros(self), dims);
                                            }};

// expand's gradient sums over the expanded dims, as PyTorch's (at::sum_to).
const OpSpec kExpand{
    "expand",
    {{self, {}, [](const Ctx& c) { return sum_to(c.grad(), c.input_shape(self)); }}},
    {AliasKind::kView, ViewAttrs{},
     [](const OpArgs& a) { return expand(a[self], a.attrs<ViewAttrs>().args); }}};
const DeclareJvp expand_jvp{kExpand, jvp_linear};
const DeclareBatchedJvp expand_batched_jvp{kExpand, batched_as_broadcast};

// broadcast_to is expand under its own name (PyTorch's broadcast_to calls expand): a view, also
// to the input's own shape (a new view, not the input), whose attribute is the result's shape.
const OpSpec kBroadcastTo{
    "broadcast_to",
    {{self, {}, [](const Ctx& c) { return sum_to(c.grad(), c.input_shape(self)); }}},
    {AliasKind::kView, ShapeAttrs{},
     [](const OpArgs& a) { return broadcast_to(a[self], a.attrs<ShapeAttrs>().shape); }}};
const DeclareJvp broadcast_to_jvp{kBroadcastTo, jvp_linear};
const DeclareBatchedJvp broadcast_to_batched_jvp{kBroadcastTo, batched_as_broadcast};

// transpose's attributes are its two dims (the JIT's text form spells them `dim0`, `dim1`); its
// gradient is the same transpose of the incoming gradient, a view of it as PyTorch's.
const OpSpec kTranspose{"transpose",
                        {{self,
                          {},
                          [](const Ctx& c) {
                            const auto& [dim0, dim1] = c.attrs<TransposeAttrs>();
                            return transpose(c.grad(), dim0, dim1);
                          }}},
                        {AliasKind::kView, TransposeAttrs{0, 1}, [](const OpArgs& a) {
                           const auto& [dim0, dim1] = a.attrs<TransposeAttrs>();
                           return transpose(a[self], dim0, dim1);
                         }}};
const DeclareJvp transpose_jvp{kTranspose, jvp_linear};
const DeclareBatchedJvp transpose_batched_jvp{
    kTranspose, [](const JvpContext& c) {
      const auto& [dim0, dim1] = c.attrs<TransposeAttrs>();
      return transpose(c.tangent_or_zeros(self), dim_in(c, dim0) + 1, dim_in(c, dim1) + 1);
    }};

// Note [Zero-size as_strided gradients]
// PyTorch's as_strided_backward returns at::zeros of the input's shape when the result or the
// input has no elements, before it reads the incoming gradient: a constant, so under create_graph
// that gradient does not require grad and is a leaf, whatever the incoming gradient is (a diagonal
// or slice of no elements, whose backward formulas have no such case, gives a recorded gradient).
// The same holds for a view's regenerated history, PyTorch's AsStridedBackward0 too.

// Note [as_strided gradients of overlapping inputs]
// as_strided reads the storage, not its input's elements: its gradient goes through the storage's
// elements (from the lowest the input or the result reads), as PyTorch's as_strided_backward: the
// incoming gradient added into zeros at the result's elements, read at the input's. An input that
// may read a storage element at several indices (an expanded tensor, overlapping unfold windows:
// PyTorch's _maybe_overlapping_memory, may_overlap here) shares that element's gradient among
// them: PyTorch divides each storage element's gradient by how many input indices read it, so
// that the input's own backward (an expand's sum) adds the shares back to the element's. Here the
// gathered gradient is divided by those counts read at the same indices: the same quotients, and
// a division by a constant, so the gradient stays linear in the incoming one to any order.
const OpSpec kAsStrided{
    "as_strided",
    {{self,
      {},
      [](const Ctx& c) {
        const Shape& x = c.attrs<ViewAttrs>().args;  // [n, sizes..., strides..., offset, input...]
        const auto n = static_cast<size_t>(x[0]);
        const Layout result{Shape(x.begin() + 1, x.begin() + 1 + n),
                            Shape(x.begin() + 1 + n, x.begin() + 1 + 2 * n), x[1 + 2 * n]};
        const auto m = static_cast<size_t>(x[2 + 2 * n]);
        const size_t at = 3 + 2 * n;
        const Layout input{c.input_shape(self), Shape(x.begin() + at, x.begin() + at + m),
                           x[at + m]};
        return as_strided_gradient(c.grad(), input, result);
      }}},
    {AliasKind::kView, ViewAttrs{}, [](const OpArgs& a) {
       const Shape& x = a.attrs<ViewAttrs>().args;
       const auto n = static_cast<size_t>(x[0]);
       return as_strided(a[self], Shape(x.begin() + 1, x.begin() + 1 + n),
                         Shape(x.begin() + 1 + n, x.begin() + 1 + 2 * n), x[1 + 2 * n]);
     }}};
// Note [as_strided's tangent]
// as_strided reads its input's storage, and its jvp rule reads the tangent's storage at the same
// layout, moved by where the tangent starts in its storage past where the input starts in its own
// (PyTorch's self_t.as_strided(size, stride, storage_offset)): so the tangent must be laid out as
// the input. A view's is (Note [Tangents of views], engine/forward_ad.cc); an op's result's may not
// be (an elementwise op's result keeps a transposed input's strides, where its tangent is
// row-major), and is then copied at the input's strides, as PyTorch's set_fw_grad copies a tangent
// whose layout is not its primal's. A batched tangent (Note [Batching rules]) is laid out so past
// its batch dim: row b is then the input's layout moved b batch strides, and the rows' view is the
// op's layout with that batch stride in front, as a view's tangent is read from its base's. (Run
// row by row, each row's view would take the op's offset from the start of the tangent's storage,
// so that every row read row 0's elements.)
Tensor tangent_laid_out_as(const Tensor& t, const Tensor& p, int64_t batch) {
  const Shape strides = t.strides();
  if (Shape(strides.begin() + (batch > 0 ? 1 : 0), strides.end()) == p.strides()) return t;
  AG_CHECK(is_non_overlapping_and_dense(layout_of(p)), "as_strided: forward AD: the tangent of ",
           p.describe(), " has strides ", to_string(strides), ", where the input has ",
           to_string(p.strides()), " and is not dense; give it a tangent with its strides");
  Shape want = p.strides();
  if (batch > 0) want.insert(want.begin(), p.numel());
  return clone_with_strides(t, want);
}
Tensor as_strided_tangent(const JvpContext& c) {
  const Tensor& p = c.primal(self);
  const Tensor t = tangent_laid_out_as(c.tangent(self), p, c.batch());
  const Shape& x = c.attrs<ViewAttrs>().args;  // [n, sizes..., strides..., offset, input...]
  const auto n = static_cast<size_t>(x[0]);
  Shape sizes(x.begin() + 1, x.begin() + 1 + n), strides(x.begin() + 1 + n, x.begin() + 1 + 2 * n);
  if (c.batch() > 0) {
    sizes.insert(sizes.begin(), c.batch());
    strides.insert(strides.begin(), t.strides()[0]);
  }
  return as_strided(t, sizes, strides, t.storage_offset() - p.storage_offset() + x[1 + 2 * n]);
}
const DeclareJvp as_strided_jvp{kAsStrided, as_strided_tangent};
const DeclareBatchedJvp as_strided_batched_jvp{kAsStrided, as_strided_tangent};

// Makes the view `layout_of_view` gives of `a`, recorded as `spec` with the attributes that
// make_attrs(layout of the view over a's elements) gives; its layout over its root base follows
// from a's by the same function (Note [Views of any stride]).
template <typename MakeAttrs, typename LayoutOf>
Tensor make_view_with(const OpSpec& spec, const Tensor& a, const MakeAttrs& make_attrs,
                      const LayoutOf& layout_of_view) {
  const Layout actual = layout_of_view(layout_of(a));
  Tensor view = a.alias_with_layout(actual.sizes, actual.strides, actual.offset);
  view = record(spec, {&a}, std::move(view),
                [&] { return OpAttrs(make_attrs(layout_of_view(contiguous_layout(a.shape())))); });
  mark_view(view, a, layout_of_view(layout_in_base(a)));
  return view;
}
// The same, with ViewAttrs holding the op's integer arguments `args`.
template <typename LayoutOf>
Tensor make_view(const OpSpec& spec, const Tensor& a, Shape args, const LayoutOf& layout_of_view) {
  return make_view_with(
      spec, a,
      // Not moved from: the attributes are made twice while a trace is on (ops/record.h).
      [&](const Layout& relative) {
        return ViewAttrs{args, relative.sizes, relative.strides, relative.offset};
      },
      layout_of_view);
}

// A dim of `t` (which may be 0-dim: Note [Dims of a 0-dim tensor] does not apply to the views
// that remove or index a dim, which PyTorch refuses on a 0-dim tensor).
int64_t view_dim(const char* op, int64_t dim, const Tensor& t, bool allow_0_dim = false) {
  AG_CHECK(allow_0_dim || t.dim() > 0, op, ": cannot be applied to a 0-dim tensor");
  return normalize_dim(op, dim, t);
}

}  // namespace

Tensor as_strided_gradient(const Tensor& incoming, const Layout& input, const Layout& result) {
  // Note [Zero-size as_strided gradients]
  if (incoming.numel() == 0 || numel(input.sizes) == 0) {
    return zeros(input.sizes, incoming.dtype(), incoming.device());
  }
  // As PyTorch's as_strided_backward, the result's dims that add no storage element go first,
  // the last dim first: a size-1 dim squeezed, a stride-0 dim summed. The same values; but the
  // double backward then runs through those ops' gradients, an unsqueeze and an expand, so the
  // gradient of `incoming` has their strides (a stride-0 [2,1] result's is [0,1]), not a
  // contiguous gather's.
  Tensor grad = incoming;
  Layout r = result, i = input;
  for (auto d = static_cast<int64_t>(r.sizes.size()) - 1; d >= 0; --d) {
    const auto at = static_cast<size_t>(d);
    if (r.sizes[at] != 1 && r.strides[at] != 0) continue;
    grad = r.sizes[at] == 1 ? squeeze(grad, d) : sum(grad, d, false);
    r.sizes.erase(r.sizes.begin() + d);
    r.strides.erase(r.strides.begin() + d);
  }
  const int64_t low = std::min(r.offset, i.offset);
  const int64_t extent = std::max(r.offset + storage_extent(r), i.offset + storage_extent(i)) - low;
  r.offset -= low;
  i.offset -= low;
  Tensor g = view_gather(view_scatter(grad, {extent}, r), i);
  if (may_overlap(i)) {
    // Note [as_strided gradients of overlapping inputs]
    const Tensor ones_at_input = ones(i.sizes, g.dtype(), g.device());
    g = div(g, view_gather(view_scatter(ones_at_input, {extent}, i), i));
  }
  // PyTorch's result is a view of the storage it fills (so detach_() on it raises, say): a view
  // of new storage here too, as regenerated_view_gradient's (ops/shape_ops.cc).
  return reshape(g, g.shape());
}

Layout layout_in_base(const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  if (!impl.view_base) return contiguous_layout(t.shape());
  return Layout{t.shape(), impl.view_strides, impl.view_offset};
}

Tensor select(const Tensor& a, int64_t dim, int64_t index) {
  check_defined("select", a, "input");
  dim = view_dim("select", dim, a);
  return make_view(kSelect, a, {dim, index},
                   [&](const Layout& in) { return select_layout(in, dim, index); });
}

Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step) {
  check_defined("slice", a, "input");
  dim = view_dim("slice", dim, a);
  AG_CHECK(step > 0, "slice: slice step must be positive, got ", step, " (tensor ", a.describe(),
           ")");
  // Python's slice bounds: negative ones count from the end, then both clamp to [0, size].
  const int64_t size = a.shape()[dim];
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size); };
  start = clamp(start);
  end = std::max(clamp(end), start);
  return make_view(kSlice, a, {dim, start, end, step},
                   [&](const Layout& in) { return slice_layout(in, dim, start, end, step); });
}

Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length) {
  check_defined("narrow", a, "input");
  dim = view_dim("narrow", dim, a);
  const int64_t size = a.shape()[dim];
  AG_CHECK(start >= -size && start <= size,
           "narrow: start out of range (expected to be in range of [", -size, ", ", size,
           "], but got ", start, ") for tensor ", a.describe());
  if (start < 0) start += size;
  AG_CHECK(length >= 0, "narrow: length must be non-negative, got ", length);
  AG_CHECK(start + length <= size, "narrow: start (", start, ") + length (", length,
           ") exceeds dimension size (", size, ") of tensor ", a.describe(), " at dim ", dim);
  return slice(a, dim, start, start + length, 1);
}

Tensor t(const Tensor& a) {
  check_defined("t", a, "input");
  AG_CHECK(a.dim() <= 2, "t: expects a tensor with <= 2 dimensions, but self is ", a.dim(), "D (",
           a.describe(), ")");
  // Below 2-D, PyTorch's t() is transpose(0, 0), an alias whose gradient is t() of the incoming
  // gradient, a new view of it: the identity permute (not alias, whose gradient is the incoming
  // gradient itself).
  if (a.dim() < 2) {
    std::vector<int64_t> identity(static_cast<size_t>(a.dim()));
    for (size_t d = 0; d < identity.size(); ++d) identity[d] = static_cast<int64_t>(d);
    return permute(a, identity);
  }
  return permute(a, {1, 0});
}

Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1) {
  check_defined("transpose", a, "input");
  // Note [Dims of a 0-dim tensor]: dims 0 and -1 of a 0-dim tensor name its one element.
  dim0 = view_dim("transpose", dim0, a, /*allow_0_dim=*/true);
  dim1 = view_dim("transpose", dim1, a, /*allow_0_dim=*/true);
  return make_view_with(
      kTranspose, a,
      [&](const Layout&) {
        return TransposeAttrs{dim0, dim1};
      },
      [&](const Layout& in) { return in.sizes.empty() ? in : transpose_layout(in, dim0, dim1); });
}

Tensor permute(const Tensor& a, const std::vector<int64_t>& dims) {
  check_defined("permute", a, "input");
  permute_layout("permute", layout_of(a), dims);  // checks the order
  std::vector<int64_t> order = dims;
  for (int64_t& d : order) d = d < 0 ? d + a.dim() : d;
  return make_view(kPermute, a, Shape(order.begin(), order.end()),
                   [&](const Layout& in) { return permute_layout("permute", in, order); });
}

Tensor expand(const Tensor& a, const Shape& sizes) {
  check_defined("expand", a, "input");
  const Layout checked = expand_layout(layout_of(a), sizes);  // resolves -1
  return make_view(kExpand, a, checked.sizes,
                   [&](const Layout& in) { return expand_layout(in, checked.sizes); });
}

Tensor broadcast_to(const Tensor& a, const Shape& shape) {
  check_defined("broadcast_to", a, "input");
  check_broadcastable_to("broadcast_to", a.shape(), shape);
  const Shape sizes = expand_layout(layout_of(a), shape).sizes;  // resolves -1
  return make_view_with(
      kBroadcastTo, a, [&](const Layout&) { return ShapeAttrs{sizes}; },
      [&](const Layout& in) { return expand_layout(in, sizes); });
}

Tensor unsqueeze(const Tensor& a, int64_t dim) {
  check_defined("unsqueeze", a, "input");
  const int64_t n = a.dim() + 1;
  AG_CHECK(dim >= -n && dim < n, "unsqueeze: dim ", dim, " is out of range for a tensor of shape ",
           to_string(a.shape()), " (expected a dim in [", -n, ", ", n - 1, "])");
  if (dim < 0) dim += n;
  return make_view(kUnsqueeze, a, {dim},
                   [&](const Layout& in) { return unsqueeze_layout(in, dim); });
}

Tensor squeeze(const Tensor& a) {
  check_defined("squeeze", a, "input");
  return make_view(kSqueeze, a, {}, [](const Layout& in) { return squeeze_layout(in); });
}

Tensor squeeze(const Tensor& a, int64_t dim) {
  check_defined("squeeze", a, "input");
  dim = view_dim("squeeze", dim, a, /*allow_0_dim=*/true);
  return make_view(kSqueeze, a, {dim}, [&](const Layout& in) {
    return in.sizes.empty() ? in : squeeze_layout(in, dim);
  });
}

Tensor diagonal(const Tensor& a, int64_t offset, int64_t dim1, int64_t dim2) {
  check_defined("diagonal", a, "input");
  AG_CHECK(a.dim() >= 2, "diagonal: expects a tensor with at least 2 dimensions, got ",
           a.describe());
  dim1 = normalize_dim("diagonal", dim1, a);
  dim2 = normalize_dim("diagonal", dim2, a);
  AG_CHECK(dim1 != dim2, "diagonal: diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  return make_view(kDiagonal, a, {offset, dim1, dim2},
                   [&](const Layout& in) { return diagonal_layout(in, offset, dim1, dim2); });
}

Tensor unfold(const Tensor& a, int64_t dim, int64_t size, int64_t step) {
  check_defined("unfold", a, "input");
  dim = normalize_dim("unfold", dim, a);
  return make_view(kUnfold, a, {dim, size, step},
                   [&](const Layout& in) { return unfold_layout(in, dim, size, step); });
}

Tensor as_strided(const Tensor& a, const Shape& sizes, const Shape& strides, int64_t offset) {
  check_defined("as_strided", a, "input");
  AG_CHECK(sizes.size() == strides.size(), "as_strided: mismatch in length of strides and shape (",
           to_string(sizes), " and ", to_string(strides), ")");
  for (size_t i = 0; i < sizes.size(); ++i) {
    AG_CHECK(strides[i] >= 0,
             "as_strided: negative strides are not supported at the moment, got "
             "strides: ",
             to_string(strides));
    AG_CHECK(sizes[i] >= 0, "as_strided: negative size ", sizes[i], " in ", to_string(sizes));
  }
  AG_CHECK(offset >= 0, "as_strided: negative storage offset ", offset);
  const Layout result{sizes, strides, offset};
  const int64_t storage =
      static_cast<int64_t>(a.impl()->storage->nbytes() / element_size(a.dtype()));
  // A result with no elements reads no storage: any offset is in bounds (PyTorch's
  // checkInBoundsForStorage).
  AG_CHECK(numel(sizes) == 0 || offset + storage_extent(result) <= storage, "as_strided: sizes ",
           to_string(sizes), ", strides ", to_string(strides), ", storage offset ", offset,
           " and itemsize ", element_size(a.dtype()), " requiring a storage size of ",
           (offset + storage_extent(result)) * static_cast<int64_t>(element_size(a.dtype())),
           " are out of bounds for storage of size ",
           storage * static_cast<int64_t>(element_size(a.dtype())));
  Shape args{static_cast<int64_t>(sizes.size())};
  args.insert(args.end(), sizes.begin(), sizes.end());
  args.insert(args.end(), strides.begin(), strides.end());
  args.push_back(offset);
  const Shape own = a.strides();
  args.push_back(static_cast<int64_t>(own.size()));
  args.insert(args.end(), own.begin(), own.end());
  args.push_back(a.storage_offset());
  Tensor view = a.alias_with_layout(sizes, strides, offset);
  view = record(kAsStrided, {&a}, std::move(view), [&] {
    return OpAttrs(ViewAttrs{args, {}, {}, 0});
  });
  // Its layout over the root base: the storage's, from the root's first element, which is over
  // the root's elements too where the root is contiguous (Note [Views over a root's storage]).
  const Tensor root = a.is_view() ? a.base() : a;
  mark_view(view, a, Layout{sizes, strides, offset - root.storage_offset()},
            /*over_storage=*/!root.is_contiguous());
  return view;
}

Tensor alias(const Tensor& a) {
  check_defined("alias", a, "input");
  return make_view(kAlias, a, {}, [](const Layout& in) { return in; });
}

Tensor contiguous(const Tensor& a) {
  check_defined("contiguous", a, "input");
  return a.is_contiguous() ? a : contiguous_clone(a);
}

// The three linear ops that move gradients between a view and its base; each one's gradient is
// another of them, so that gradients through views differentiate to any order.
namespace {
// Their JIT forwards (a group's backward graph runs them) read the layout from the attributes,
// and view_scatter its result's shape from `args`.
const OpSpec kViewScatter{
    "view_scatter",
    {{self, {}, [](const Ctx& c) { return view_gather(c.grad(), c.attrs<ViewAttrs>().layout()); }}},
    {AliasKind::kPure, ViewAttrs{}, [](const OpArgs& a) {
       const auto& at = a.attrs<ViewAttrs>();
       return view_scatter(a[self], at.args, at.layout());
     }}};
const DeclareJvp view_scatter_jvp{kViewScatter, jvp_linear};
const OpSpec kViewGather{
    "view_gather",
    {{self,
      {},
      [](const Ctx& c) {
        return view_scatter(c.grad(), c.input_shape(self), c.attrs<ViewAttrs>().layout());
      }}},
    {AliasKind::kPure, ViewAttrs{},
     [](const OpArgs& a) { return view_gather(a[self], a.attrs<ViewAttrs>().layout()); }}};
const DeclareJvp view_gather_jvp{kViewGather, jvp_linear};
const OpSpec kViewZeroed{
    "view_zeroed",
    {{self, {}, [](const Ctx& c) { return view_zeroed(c.grad(), c.attrs<ViewAttrs>().layout()); }}},
    {AliasKind::kPure, ViewAttrs{},
     [](const OpArgs& a) { return view_zeroed(a[self], a.attrs<ViewAttrs>().layout()); }}};
const DeclareJvp view_zeroed_jvp{kViewZeroed, jvp_linear};
// Note [Batching rules]: their layouts are over a row's elements in row-major order, so over B
// rows of n elements each they are the same layout with the batch dim in front, at stride n.
Layout batched_layout(const Layout& at, int64_t batch, int64_t n) {
  Layout out = at;
  out.sizes.insert(out.sizes.begin(), batch);
  out.strides.insert(out.strides.begin(), n);
  return out;
}
Shape batched_shape(int64_t batch, const Shape& shape) {
  Shape out = shape;
  out.insert(out.begin(), batch);
  return out;
}
const DeclareBatchedJvp view_scatter_batched_jvp{
    kViewScatter, [](const JvpContext& c) {
      const Shape& shape = c.result().shape();
      return view_scatter(c.tangent(self), batched_shape(c.batch(), shape),
                          batched_layout(c.attrs<ViewAttrs>().layout(), c.batch(), numel(shape)));
    }};
const DeclareBatchedJvp view_gather_batched_jvp{
    kViewGather, [](const JvpContext& c) {
      const int64_t n = c.primal(self).numel();
      return view_gather(c.tangent(self),
                         batched_layout(c.attrs<ViewAttrs>().layout(), c.batch(), n));
    }};
const DeclareBatchedJvp view_zeroed_batched_jvp{
    kViewZeroed, [](const JvpContext& c) {
      const int64_t n = c.result().numel();
      return view_zeroed(c.tangent(self),
                         batched_layout(c.attrs<ViewAttrs>().layout(), c.batch(), n));
    }};
OpAttrs view_attrs(const Layout& at, Shape args = {}) {
  return ViewAttrs{std::move(args), at.sizes, at.strides, at.offset};
}
}  // namespace

Tensor scattered_into_zeros(const Tensor& g, const Shape& shape, const Layout& at) {
  Tensor out = zeros(shape, g.dtype(), g.device());
  backend_for(g.device()).scatter(out, at, g, /*accumulate=*/true);
  out.bump_version();  // the zeros mark no longer holds (Note [Known zeros])
  return out;
}

Tensor view_scatter(const Tensor& g, const Shape& shape, const Layout& at) {
  return record(kViewScatter, {&g}, scattered_into_zeros(g, shape, at),
                [&] { return view_attrs(at, shape); });
}

Tensor view_gather(const Tensor& t, const Layout& at) {
  Backend& backend = backend_for(t.device());
  const Tensor source = backend.dense(t);
  Tensor out = backend.dense(
      source.alias_with_layout(at.sizes, at.strides, source.storage_offset() + at.offset));
  if (out.shares_storage_with(source)) out = copy_of(out);
  return record(kViewGather, {&t}, out, [&] { return view_attrs(at); });
}

Tensor view_zeroed(const Tensor& g, const Layout& at) {
  Tensor out = copy_of(g);
  zero_at(out, at);
  return record(kViewZeroed, {&g}, out, [&] { return view_attrs(at); });
}

void zero_at(const Tensor& t, const Layout& at) {
  backend_for(t.device()).scatter(t, at, zeros(at.sizes, t.dtype(), t.device()), false);
  t.bump_version();
}

// Note [View gradients into a waiting sum]
// A view's gradient is input-shaped: the incoming gradient at the view's elements, zeros
// elsewhere. Where several views of one tensor each send it a gradient (every time step x[:, t]
// of an RNN's input, 1,000 rows selected one by one), the separate sum would cost a fill of zeros
// and a pass over the whole input per view. With a gradient already waiting for the input (Note
// [Sums fused into formulas], engine/engine.cc: held only here, grad mode off), the hook adds the
// incoming gradient into it at the view's elements alone, which is all the sum would change:
// a select of one step of [256, 64, 256] touches 1/64 of it. select, slice and diagonal have the
// hook: each reaches an element of its input at most once; so has a regenerated view that does
// (ops/shape_ops.cc), which a write through a view reads self through. unfold has none: its windows
// can overlap, and the formula's zeros + scatter rounds an element's two additions in another
// order. The values are the separate sum's; only the sign of a zero can differ, as the formula's
// zeros are +0: where the waiting gradient holds -0 outside the view, the separate sum writes +0
// (-0 + +0) and the hook leaves -0; where both it and the incoming gradient hold -0 inside the
// view, the sum writes +0 and the hook -0. Switched with fuse_gradient_sums.
bool add_view_gradient_into(const Tensor& sum, const BackwardContext& c) {
  const Tensor& g = c.grad();
  const Layout at = c.attrs<ViewAttrs>().layout();
  if (sum.shape() != c.input_shape(slots::self) || !sum.is_contiguous() ||
      sum.dtype() != g.dtype() || sum.device() != g.device() || g.shape() != at.sizes) {
    return false;
  }
  backend_for(sum.device()).scatter(sum, at, g, /*accumulate=*/true);
  sum.bump_version();
  ++counters().fused_sums;
  return true;
}

}  // namespace ag::ops
