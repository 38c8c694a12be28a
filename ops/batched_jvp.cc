// Batching rules' machinery (Note [Batching rules], ops/batched_jvp.h): the per-row fallback and
// the rules several ops share.
#include "ops/batched_jvp.h"

#include "engine/error.h"
#include "ops/ops.h"

namespace ag::ops {
namespace {

Shape batched(int64_t batch, const Shape& shape) {
  Shape out = shape;
  out.insert(out.begin(), batch);
  return out;
}

// The op's jvp rule on each row of the tangents, stacked (undefined: no row has a tangent).
Tensor per_row(const OpSpec& spec, const JvpContext& c) {
  ++batched_jvp_fallbacks()[spec.name()];
  const Tensor& result = c.result();
  TensorList rows;
  bool any = false;
  for (int64_t b = 0; b < c.batch(); ++b) {
    TensorList row_tangents;
    for (size_t i = 0; i < c.num_inputs(); ++i) {
      const Tensor& t = c.tangent(Input(static_cast<int>(i), ""));
      row_tangents.push_back(t.defined() ? select(t, 0, b) : Tensor());
    }
    const JvpContext row = c.with_tangents(row_tangents, 0);
    Tensor r = spec.jvp()(row);
    if (r.defined() && r.shape() != result.shape()) r = broadcast_to(r, result.shape());
    any = any || r.defined();
    rows.push_back(std::move(r));
  }
  if (!any) return Tensor();
  for (Tensor& r : rows) {
    if (!r.defined()) r = zeros_like(result);
  }
  return stack(rows, 0);
}

// jvp_from_formulas with every slot and tangent expanded to [B, *result shape] (views): the
// formulas' kernels, some of which want equal shapes (tanh_backward's fused kernel), then see
// one shape, the row's with the batch dim in front.
Tensor batched_from_formulas(const JvpContext& c) {
  const OpSpec& spec = c.spec();
  const Shape out = batched(c.batch(), c.result().shape());
  const auto expanded = [&](const Tensor& t) {
    return t.defined() && t.dim() <= c.result().dim() ? broadcast_to(t, out) : t;
  };
  std::vector<Tensor> slots(spec.num_slots());
  for (size_t j = 0; j < slots.size(); ++j) {
    const Slot& s = spec.slot(j);
    slots[j] = expanded(s.kind == Slot::Kind::kInput    ? c.primal(Input(s.position, s.name))
                        : s.kind == Slot::Kind::kResult ? c.result()
                                                        : c.forward_value(s.position));
  }
  const std::vector<Shape> shapes(c.num_inputs(), out);
  Tensor sum;
  for (size_t i = 0; i < spec.num_inputs(); ++i) {
    if (!spec.differentiable(i)) continue;
    const Tensor t = c.term_tangent(Input(static_cast<int>(i), ""));
    if (!t.defined()) continue;
    // Named: the context keeps a reference to its gradient.
    const Tensor grad = broadcast_to(align_batched(t, c.result().dim()), out);
    const BackwardContext ctx(spec, grad, i, shapes, c.all_attrs(), slots.data());
    add_term(sum, spec.formula(i)(ctx));
  }
  return sum;
}

}  // namespace

Tensor align_batched(const Tensor& t, int64_t rank) {
  Tensor out = t;
  for (int64_t d = t.dim() - 1; d < rank; ++d) out = unsqueeze(out, 1);
  return out;
}

Tensor batched_jvp(const OpSpec& spec, const JvpContext& c) {
  const JvpFn rule = spec.batched_jvp() != nullptr     ? spec.batched_jvp()
                     : spec.jvp() == jvp_from_formulas ? batched_from_formulas
                                                       : nullptr;
  Tensor t = rule != nullptr ? rule(c) : per_row(spec, c);
  const Shape shape = batched(c.batch(), c.result().shape());
  if (t.defined() && t.shape() != shape)
    t = broadcast_to(align_batched(t, c.result().dim()), shape);
  return t;
}

Tensor batched_as_reshape(const JvpContext& c) {
  return batched_result(c, c.tangent(Input(0, "self")));
}

Tensor batched_as_broadcast(const JvpContext& c) {
  const Tensor& t = c.tangent(Input(0, "self"));
  if (!t.defined()) return t;
  return broadcast_to(align_batched(t, c.result().dim()), batched(c.batch(), c.result().shape()));
}

Tensor batched_sum_to_result(const JvpContext& c, const Shape& kept, bool mean) {
  const Tensor& t = c.tangent(Input(0, "self"));
  if (!t.defined()) return t;
  Tensor s = reshape(sum_to(t, batched(c.batch(), kept)), batched(c.batch(), c.result().shape()));
  if (!mean) return s;
  const int64_t n = c.primal(Input(0, "self")).numel();
  return mul(s, n == 0 ? 0.0 : static_cast<double>(c.result().numel()) / static_cast<double>(n));
}

Tensor batched_at_least_1d(const Tensor& t) {
  return t.defined() && t.dim() == 1 ? reshape(t, {t.shape()[0], 1}) : t;
}

Tensor expanded_row(const Tensor& p, int64_t batch) {
  return broadcast_to(p, batched(batch, p.dim() == 0 ? Shape{1} : p.shape()));
}

Tensor batched_result(const JvpContext& c, const Tensor& t) {
  return t.defined() ? reshape(t, batched(c.batch(), c.result().shape())) : t;
}

Index batched_index(const Index& index, int64_t batch) {
  Index out{batched(batch, index.shape.empty() ? Shape{1} : index.shape), {}};
  out.values.reserve(index.values.size() * static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b)
    out.values.insert(out.values.end(), index.values.begin(), index.values.end());
  return out;
}

std::map<std::string, int64_t>& batched_jvp_fallbacks() {
  thread_local std::map<std::string, int64_t> counts;
  return counts;
}

}  // namespace ag::ops
