// The ops along a dim that keep the shape: softmax and cumsum (log_softmax is ops/loss.cc's).
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "ops/batched_jvp.h"
#include "ops/checks.h"
#include "ops/host_kernels.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/spec.h"
#include "ops/trace_hook.h"

namespace ag::ops {
namespace {

Tensor cumsum_along(const Tensor& a, int64_t dim, bool reverse);

Tensor softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim);

// softmax(self, dim) = result: d/dself is softmax_backward(grad, result), PyTorch's
// _softmax_backward_data.
struct Softmax {
  static constexpr Input self{0, "self"};
  static constexpr Result result{};
  static const OpSpec spec;
};
const OpSpec Softmax::spec{
    "softmax",
    {{self,
      {result},
      [](const Ctx& c) { return softmax_backward(c.grad(), c[result], c.attrs<DimAttrs>().dim); }}},
    {AliasKind::kPure, DimAttrs{0},
     [](const OpArgs& a) { return softmax(a[self], a.attrs<DimAttrs>().dim); }}};
// PyTorch's: result * (self_t - sum(result * self_t, dim, keepdim)), which is softmax's gradient
// formula applied to the tangent.
const DeclareJvp softmax_jvp{Softmax::spec, [](const JvpContext& c) {
                               return softmax_backward(c.tangent(Softmax::self), c.result(),
                                                       c.attrs<DimAttrs>().dim);
                             }};
// Note [Batched dims]: the same at dim + 1, beside the result expanded to the batch.
const DeclareBatchedJvp softmax_batched_jvp{
    Softmax::spec, [](const JvpContext& c) {
      const Tensor t = batched_at_least_1d(c.tangent(Softmax::self));
      const Tensor y = expanded_row(c.result(), c.batch());
      return batched_result(c, softmax_backward(t, y, c.attrs<DimAttrs>().dim + 1));
    }};

// Note [softmax's gradient is one op]
// softmax_backward(grad, output) = output * (grad - sum(grad * output, dim)), recorded as one op
// of its own, as PyTorch's _softmax_backward_data, not as the mul, sum and sub it computes: its
// derivatives read only grad and output (softmax_double_backward), so a gradient of it reaches
// their histories and no node of softmax's own gradient. A later call through it then runs
// where PyTorch's does: after grad(softmax's gradient, [output]) without retain_graph freed
// that gradient's nodes, a backward() through the result still runs (found by a live fuzz run,
// pin-softmax-double-backward-reads-no-freed-node).
struct SoftmaxBackward {
  static constexpr Input grad{0, "grad_output"}, output{1, "output"};
  static const OpSpec spec;
};
const OpSpec SoftmaxBackward::spec{
    "softmax_backward",
    {{grad,
      {output},
      [](const Ctx& c) { return softmax_backward(c.grad(), c[output], c.attrs<DimAttrs>().dim); }},
     // PyTorch's softmax_double_backward(gg, grad, dim, output).
     {output,
      {grad, output},
      [](const Ctx& c) {
        const int64_t dim = c.attrs<DimAttrs>().dim;
        const Tensor &gg = c.grad(), &g = c[grad], &y = c[output];
        return g * gg - sum(y * g, dim, true) * gg - g * sum(y * gg, dim, true);
      }}},
    {AliasKind::kPure, DimAttrs{0}, [](const OpArgs& a) {
       return softmax_backward(a[grad], a[output], a.attrs<DimAttrs>().dim);
     }}};
// Linear in grad, so its part is softmax_backward of grad's tangent; output's part is the
// derivative in output along its tangent, whose transpose the formula above applies. Either
// tangent may be undefined (no term).
Tensor softmax_backward_tangent(const Tensor& g, const Tensor& y, const Tensor& gt,
                                const Tensor& yt, int64_t dim) {
  Tensor t;
  if (gt.defined()) t = softmax_backward(gt, y, dim);
  if (yt.defined()) add_term(t, g * yt - sum(y * g, dim, true) * yt - y * sum(g * yt, dim, true));
  return t;
}
const DeclareJvp softmax_backward_jvp{
    SoftmaxBackward::spec, [](const JvpContext& c) {
      return softmax_backward_tangent(
          c.primal(SoftmaxBackward::grad), c.primal(SoftmaxBackward::output),
          c.term_tangent(SoftmaxBackward::grad), c.term_tangent(SoftmaxBackward::output),
          c.attrs<DimAttrs>().dim);
    }};
// Note [Batched dims]: the same terms at dim + 1, the primals expanded to the batch.
const DeclareBatchedJvp softmax_backward_batched_jvp{
    SoftmaxBackward::spec, [](const JvpContext& c) {
      return batched_result(
          c, softmax_backward_tangent(expanded_row(c.primal(SoftmaxBackward::grad), c.batch()),
                                      expanded_row(c.primal(SoftmaxBackward::output), c.batch()),
                                      batched_at_least_1d(c.term_tangent(SoftmaxBackward::grad)),
                                      batched_at_least_1d(c.term_tangent(SoftmaxBackward::output)),
                                      c.attrs<DimAttrs>().dim + 1));
    }};

Tensor softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim) {
  Tensor out;
  {
    NoGradGuard values;
    TracePause one_op;  // a trace records softmax_backward, not the ops that compute it
    const Tensor g = grad.detach(), y = output.detach();
    out = y * (g - sum(g * y, dim, true));
  }
  return record(SoftmaxBackward::spec, {&grad, &output}, std::move(out), DimAttrs{dim});
}

// cumsum(self, dim): PyTorch's cumsum_backward, the running sum of the gradient from the last
// element (grad.flip(dim).cumsum(dim).flip(dim)); the reversed sum's own gradient is the
// forward one, so one op with a direction covers every order. Along a dim of size 1 (or over at
// most one element) it is the gradient itself, as PyTorch's trivial case: not a copy, so a view
// of it made by the next formula has the gradient's flags.
struct Cumsum {
  static constexpr Input self{0, "self"};
  static const OpSpec spec;
};
const OpSpec Cumsum::spec{"cumsum",
                          {{self,
                            {},
                            [](const Ctx& c) {
                              const auto& [dim, reverse] = c.attrs<CumsumAttrs>();
                              const Tensor& g = c.grad();
                              if (g.numel() <= 1 || g.size(dim) == 1) return g;
                              return cumsum_along(g, dim, !reverse);
                            }}},
                          {AliasKind::kPure, CumsumAttrs{0}, [](const OpArgs& a) {
                             const auto& [dim, reverse] = a.attrs<CumsumAttrs>();
                             return cumsum_along(a[self], dim, reverse);
                           }}};
const DeclareJvp cumsum_jvp{Cumsum::spec, jvp_linear};
// Note [Batched dims]: the running sum of the tangent along dim + 1.
const DeclareBatchedJvp cumsum_batched_jvp{
    Cumsum::spec, [](const JvpContext& c) {
      const auto& [dim, reverse] = c.attrs<CumsumAttrs>();
      const Tensor t = c.tangent(Cumsum::self);
      return batched_result(c, cumsum_along(batched_at_least_1d(t), dim + 1, reverse));
    }};

// `dim` normalized (Note [Dims of a 0-dim tensor]: the kernel sees a 0-dim tensor as [1]).
Tensor cumsum_along(const Tensor& a, int64_t dim, bool reverse) {
  Tensor out = host::cumsum(at_least_1d(a), dim, reverse);
  if (a.dim() == 0) out = out.alias_with_shape({});
  return record(Cumsum::spec, {&a}, std::move(out), CumsumAttrs{dim, reverse});
}

}  // namespace

Tensor softmax(const Tensor& a, int64_t dim) {
  check_defined("softmax", a, "input");
  dim = normalize_dim("softmax", dim, a);
  if (a.numel() == 0) return record(Softmax::spec, {&a}, zeros_like(a), DimAttrs{dim});
  Tensor out = host::softmax(at_least_1d(a), dim);
  // Note [Dims of a 0-dim tensor]: over a 0-dim tensor's one element, softmax is 1.
  if (a.dim() == 0) out = out.alias_with_shape({});
  return record(Softmax::spec, {&a}, std::move(out), DimAttrs{dim});
}

Tensor cumsum(const Tensor& a, int64_t dim) {
  check_defined("cumsum", a, "input");
  dim = normalize_dim("cumsum", dim, a);
  return cumsum_along(a, dim, false);
}

}  // namespace ag::ops
