// Indexing along a dim: index_select, gather, scatter_add, and max/min along a dim, whose
// gradients put the incoming gradient back where the forward read it (scatter_add into zeros),
// and whose second derivatives read it from there again (gather).
#include <algorithm>
#include <memory>
#include <utility>

#include "engine/error.h"
#include "ops/batched_jvp.h"
#include "ops/checks.h"
#include "ops/host_kernels.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/spec.h"

namespace ag::ops {
namespace {

// Note [The index is a saved value]: PyTorch's nodes of gather, scatter_add, index_select and
// max/min along a dim save the index (max/min: the indices they return) as a tensor, which a
// backward without retain_graph frees like any saved value; a formula that reads it again raises
// (scatter_add's gradient for self does not read it). The engine keeps the index in the node's
// attributes, so OpNode::release_saved drops the node's copy, and a formula reads it through
// saved_index(), which raises as an unpacked freed value does.
// `name`: PyTorch's name for it (max/min: "indices").
const std::vector<int64_t>& saved_index(const Ctx& c, const char* name = "index") {
  const IndexAttrs& a = c.attrs<IndexAttrs>();
  if (a.index == nullptr) {
    fail("Trying to backward through the graph a second time: the value '", name, "' saved by '",
         c.spec().name(),
         "' was already freed. Pass retain_graph to the first backward()/grad() call if you "
         "need to backward through the graph again.");
  }
  return *a.index;
}
Index index_of(const Ctx& c, const char* name = "index") {
  return Index{c.attrs<IndexAttrs>().index_shape, saved_index(c, name)};
}
// The forward's index (a forward, or a jvp rule, reads the attributes it was given).
Index index_of(const IndexAttrs& a) { return Index{a.index_shape, *a.index}; }
IndexAttrs attrs_of(int64_t dim, bool keepdim, const Index& index) {
  return IndexAttrs{dim, keepdim, index.shape,
                    std::make_shared<const std::vector<int64_t>>(index.values)};
}
Tensor zeros_of(const Shape& shape, const Tensor& like) {
  return zeros(shape, like.dtype(), like.device());
}

// index_select's index as gather's: every position of the result reads index[its dim coordinate].
Index expanded(const Shape& out, int64_t dim, const std::vector<int64_t>& index) {
  Index e{out, {}};
  int64_t inner = 1;
  for (size_t d = dim + 1; d < out.size(); ++d) inner *= out[d];
  const int64_t n = numel(out);
  e.values.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) e.values.push_back(index[(i / inner) % out[dim]]);
  return e;
}

// gather(self, dim, index): PyTorch's gather_backward, the gradient added into zeros of self's
// shape where the forward read it. It needs only self's shape, but PyTorch's GatherBackward0 saves
// self itself (gather_backward(grad, self, dim, index, sparse_grad)), so a write into self before
// the backward fails its version check: the formula reads self too, as PyTorch's does.
struct Gather {
  static constexpr Input self{0, "self"};
  static const OpSpec spec;
};
const OpSpec Gather::spec{"gather",
                          {{self,
                            {self},
                            [](const Ctx& c) {
                              const IndexAttrs& a = c.attrs<IndexAttrs>();
                              const Tensor saved_self = c[self];  // checks its version
                              return scatter_add(zeros_of(saved_self.shape(), c.grad()), a.dim,
                                                 index_of(c), c.grad());
                            }}},
                          {AliasKind::kPure, IndexAttrs{0}, [](const OpArgs& x) {
                             const IndexAttrs& a = x.attrs<IndexAttrs>();
                             return gather(x[self], a.dim, index_of(a));
                           }}};
const DeclareJvp gather_jvp{Gather::spec, jvp_linear};
// Note [Batched dims]: the rows' tangents gathered along dim + 1 by the index repeated per row.
const DeclareBatchedJvp gather_batched_jvp{
    Gather::spec, [](const JvpContext& c) {
      const IndexAttrs& a = c.attrs<IndexAttrs>();
      const Tensor t = batched_at_least_1d(c.tangent(Gather::self));
      return batched_result(c, gather(t, a.dim + 1, batched_index(index_of(a), c.batch())));
    }};

// scatter_add(self, src): derivatives.yaml's self: grad, src: grad.gather(dim, index).
struct ScatterAdd {
  static constexpr Input self{0, "self"}, src{1, "src"};
  static const OpSpec spec;
};
const OpSpec ScatterAdd::spec{"scatter_add",
                              {{self, {}, [](const Ctx& c) { return c.grad(); }},
                               {src,
                                {},
                                [](const Ctx& c) {
                                  const IndexAttrs& a = c.attrs<IndexAttrs>();
                                  return gather(c.grad(), a.dim, index_of(c));
                                }}},
                              {AliasKind::kPure, IndexAttrs{0}, [](const OpArgs& x) {
                                 const IndexAttrs& a = x.attrs<IndexAttrs>();
                                 return scatter_add(x[self], a.dim, index_of(a), x[src]);
                               }}};
const DeclareJvp scatter_add_jvp{ScatterAdd::spec, jvp_linear};
const DeclareBatchedJvp scatter_add_batched_jvp{
    ScatterAdd::spec, [](const JvpContext& c) {
      const IndexAttrs& a = c.attrs<IndexAttrs>();
      const Tensor self = batched_at_least_1d(c.tangent_or_zeros(ScatterAdd::self));
      const Tensor src = batched_at_least_1d(c.tangent_or_zeros(ScatterAdd::src));
      return batched_result(
          c, scatter_add(self, a.dim + 1, batched_index(index_of(a), c.batch()), src));
    }};

// index_select(self, dim, index): PyTorch's index_select_backward, the gradient added into zeros
// of self's shape at the selected slices (scatter_add with the index expanded to the gradient).
struct IndexSelect {
  static constexpr Input self{0, "self"};
  static const OpSpec spec;
};
const OpSpec IndexSelect::spec{"index_select",
                               {{self,
                                 {},
                                 [](const Ctx& c) {
                                   const IndexAttrs& a = c.attrs<IndexAttrs>();
                                   const Tensor& g = c.grad();
                                   return scatter_add(zeros_of(c.input_shape(self), g), a.dim,
                                                      expanded(g.shape(), a.dim, saved_index(c)),
                                                      g);
                                 }}},
                               {AliasKind::kPure, IndexAttrs{0}, [](const OpArgs& x) {
                                  const IndexAttrs& a = x.attrs<IndexAttrs>();
                                  return index_select(x[self], a.dim, *a.index);
                                }}};
const DeclareJvp index_select_jvp{IndexSelect::spec, jvp_linear};
const DeclareBatchedJvp index_select_batched_jvp{
    IndexSelect::spec, [](const JvpContext& c) {
      const IndexAttrs& a = c.attrs<IndexAttrs>();
      const Tensor t = batched_at_least_1d(c.tangent(IndexSelect::self));
      return batched_result(c, index_select(t, a.dim + 1, *a.index));
    }};

// max/min along a dim: PyTorch's value_selecting_reduction_backward, the gradient put at the
// chosen elements (the indices, kept at keepdim shape) of zeros of self's shape.
Tensor value_selecting_backward(const Ctx& c, const Input& self) {
  const IndexAttrs& a = c.attrs<IndexAttrs>();
  const Tensor g = a.keepdim ? c.grad() : reshape(c.grad(), a.index_shape);
  return scatter_add(zeros_of(c.input_shape(self), g), a.dim, index_of(c, "indices"), g);
}
template <bool kLargest>
struct Extreme {
  static constexpr Input self{0, "self"};
  static const OpSpec spec;
};
template <bool kLargest>
const OpSpec Extreme<kLargest>::spec{
    kLargest ? "max_dim" : "min_dim",
    {{self, {}, [](const Ctx& c) { return value_selecting_backward(c, self); }}},
    {AliasKind::kPure, IndexAttrs{0}, [](const OpArgs& x) {
       const IndexAttrs& a = x.attrs<IndexAttrs>();
       return (kLargest ? max : min)(x[self], a.dim, a.keepdim).values;
     }}};
template struct Extreme<true>;
template struct Extreme<false>;
// The tangent at the chosen elements (PyTorch's gather of self_t at the indices).
Tensor value_selecting_jvp(const JvpContext& c) {
  const IndexAttrs& a = c.attrs<IndexAttrs>();
  const Tensor t = gather(c.tangent(Extreme<true>::self), a.dim, index_of(a));
  return a.keepdim ? t : reshape(t, c.result().shape());
}
const DeclareJvp max_dim_jvp{Extreme<true>::spec, value_selecting_jvp};
const DeclareJvp min_dim_jvp{Extreme<false>::spec, value_selecting_jvp};
// Note [Batched dims]: each row's tangent at its chosen elements.
Tensor batched_value_selecting_jvp(const JvpContext& c) {
  const IndexAttrs& a = c.attrs<IndexAttrs>();
  const Tensor t = batched_at_least_1d(c.tangent(Extreme<true>::self));
  return batched_result(c, gather(t, a.dim + 1, batched_index(index_of(a), c.batch())));
}
const DeclareBatchedJvp max_dim_batched_jvp{Extreme<true>::spec, batched_value_selecting_jvp};
const DeclareBatchedJvp min_dim_batched_jvp{Extreme<false>::spec, batched_value_selecting_jvp};

// Note [Dims of a 0-dim tensor]: a 0-dim input is one element along dim 0, seen as [1].
Shape at_least_1d_shape(const Shape& s) { return s.empty() ? Shape{1} : s; }

// Each value of `index` in [0, size), naming the op and the shapes.
void check_index_values(const char* op, const std::vector<int64_t>& index, int64_t dim,
                        const Tensor& a) {
  const int64_t size = a.dim() == 0 ? 1 : a.shape()[dim];
  for (size_t i = 0; i < index.size(); ++i) {
    AG_CHECK(index[i] >= 0 && index[i] < size, op, ": index ", index[i], " at position ", i,
             " is out of bounds for dim ", dim, " with size ", size, " (input ", a.describe(), ")");
  }
}

// gather's and scatter_add's index: the input's rank, no larger than `a` outside dim (and than
// `src`, for scatter_add), as many values as its shape holds.
void check_index_shape(const char* op, const Index& index, int64_t dim, const Tensor& a,
                       const Tensor* src) {
  AG_CHECK(static_cast<int64_t>(index.values.size()) == numel(index.shape), op, ": index of shape ",
           to_string(index.shape), " has ", index.values.size(), " values");
  const Shape in = at_least_1d_shape(a.shape()), at = at_least_1d_shape(index.shape);
  AG_CHECK(at.size() == in.size(), op, ": index ", to_string(index.shape),
           " must have as many dims as the input ", a.describe());
  for (size_t d = 0; d < at.size(); ++d) {
    AG_CHECK(static_cast<int64_t>(d) == dim || at[d] <= in[d], op, ": index ",
             to_string(index.shape), " is larger than the input ", a.describe(), " at dim ", d,
             " (only dim ", dim, " may differ)");
    AG_CHECK(src == nullptr || at[d] <= at_least_1d_shape(src->shape())[d], op, ": index ",
             to_string(index.shape), " is larger than src ", src->describe(), " at dim ", d);
  }
  check_index_values(op, index.values, dim, a);
}

template <bool kLargest>
ValuesIndices extreme(const Tensor& a, int64_t dim, bool keepdim) {
  const char* op = kLargest ? "max" : "min";
  check_defined(op, a, "input");
  dim = normalize_dim(op, dim, a);
  const Tensor x = at_least_1d(a);
  AG_CHECK(x.shape()[dim] > 0, op, ": dim ", dim, " of ", a.describe(),
           " is empty (a reduction needs at least one element)");
  auto [values, indices] = host::extreme(x, dim, kLargest);
  Shape out = a.shape();
  if (!keepdim && !out.empty()) out.erase(out.begin() + dim);
  if (keepdim && !out.empty()) out[dim] = 1;
  Index index{values.shape(), std::move(indices)};
  values = record(Extreme<kLargest>::spec, {&a}, values.alias_with_shape(out),
                  [&] { return attrs_of(dim, keepdim, index); });
  index.shape = out;
  return {values, std::move(index)};
}

}  // namespace

Tensor index_select(const Tensor& a, int64_t dim, const std::vector<int64_t>& index) {
  check_defined("index_select", a, "input");
  dim = normalize_dim("index_select", dim, a);
  check_index_values("index_select", index, dim, a);
  Shape out = at_least_1d_shape(a.shape());
  out[dim] = static_cast<int64_t>(index.size());
  const Index e = expanded(out, dim, index);
  Tensor result = host::gather(at_least_1d(a), dim, e.shape, e.values);
  if (a.dim() == 0) result = result.alias_with_shape({});  // one index (0) of a 0-dim input
  return record(IndexSelect::spec, {&a}, std::move(result), [&] {
    return attrs_of(dim, false, Index{{static_cast<int64_t>(index.size())}, index});
  });
}

Tensor gather(const Tensor& a, int64_t dim, const Index& index) {
  check_defined("gather", a, "input");
  dim = normalize_dim("gather", dim, a);
  check_index_shape("gather", index, dim, a, nullptr);
  Tensor out = host::gather(at_least_1d(a), dim, at_least_1d_shape(index.shape), index.values);
  if (index.shape.empty()) out = out.alias_with_shape({});
  return record(Gather::spec, {&a}, std::move(out), [&] { return attrs_of(dim, false, index); });
}

Tensor scatter_add(const Tensor& a, int64_t dim, const Index& index, const Tensor& src) {
  check_same_dtype_and_device("scatter_add", a, src);
  dim = normalize_dim("scatter_add", dim, a);
  AG_CHECK(std::max<int64_t>(src.dim(), 1) == std::max<int64_t>(a.dim(), 1), "scatter_add: src ",
           src.describe(), " must have as many dims as the input ", a.describe());
  check_index_shape("scatter_add", index, dim, a, &src);
  Tensor out = host::scatter_add(at_least_1d(a), dim, at_least_1d_shape(index.shape), index.values,
                                 at_least_1d(src));
  if (a.dim() == 0) out = out.alias_with_shape({});
  return record(ScatterAdd::spec, {&a, &src}, std::move(out),
                [&] { return attrs_of(dim, false, index); });
}

ValuesIndices max(const Tensor& a, int64_t dim, bool keepdim) {
  return extreme<true>(a, dim, keepdim);
}
ValuesIndices min(const Tensor& a, int64_t dim, bool keepdim) {
  return extreme<false>(a, dim, keepdim);
}

}  // namespace ag::ops
