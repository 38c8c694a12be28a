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

}  // namespace

Tensor align_batched(const Tensor& t, int64_t rank) {
  Tensor out = t;
  for (int64_t d = t.dim() - 1; d < rank; ++d) out = unsqueeze(out, 1);
  return out;
}

Tensor batched_jvp(const OpSpec& spec, const JvpContext& c) {
  const JvpFn rule = spec.batched_jvp();
  Tensor t = rule != nullptr ? rule(c) : per_row(spec, c);
  const Shape shape = batched(c.batch(), c.result().shape());
  if (t.defined() && t.shape() != shape)
    t = broadcast_to(align_batched(t, c.result().dim()), shape);
  return t;
}

Tensor batched_as_reshape(const JvpContext& c) {
  const Tensor& t = c.tangent(Input(0, "self"));
  return t.defined() ? reshape(t, batched(c.batch(), c.result().shape())) : t;
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

std::map<std::string, int64_t>& batched_jvp_fallbacks() {
  thread_local std::map<std::string, int64_t> counts;
  return counts;
}

}  // namespace ag::ops
