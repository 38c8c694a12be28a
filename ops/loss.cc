// log_softmax, nll_loss and cross_entropy (= nll_loss of log_softmax over classes).
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "ops/backend.h"
#include "ops/batched_jvp.h"
#include "ops/checks.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/spec.h"
#include "ops/trace_hook.h"

namespace ag::ops {
namespace {

Tensor log_softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim);

// log_softmax(self, dim) = result: d/dself is log_softmax_backward(grad, result), PyTorch's
// _log_softmax_backward_data.
struct LogSoftmax {
  static constexpr Input self{0, "self"};
  static constexpr Result result{};
  static const OpSpec spec;
};
const OpSpec LogSoftmax::spec{
    "log_softmax",
    {{self,
      {result},
      [](const Ctx& c) {
        return log_softmax_backward(c.grad(), c[result], c.attrs<DimAttrs>().dim);
      }}},
    {AliasKind::kPure, DimAttrs{1},
     [](const OpArgs& a) { return log_softmax(a[self], a.attrs<DimAttrs>().dim); }}};
// PyTorch's: self_t - logsumexp_jvp(self_p, self_t), that is self_t - sum(exp(result) * self_t).
const DeclareJvp log_softmax_jvp{LogSoftmax::spec, [](const JvpContext& c) {
                                   const Tensor& t = c.tangent(LogSoftmax::self);
                                   const int64_t dim = c.attrs<DimAttrs>().dim;
                                   return t - sum(exp(c.result()) * t, dim, true);
                                 }};
// Note [Batched dims]: the same at dim + 1, beside the result expanded to the batch.
const DeclareBatchedJvp log_softmax_batched_jvp{
    LogSoftmax::spec, [](const JvpContext& c) {
      const Tensor t = batched_at_least_1d(c.tangent(LogSoftmax::self));
      const Tensor y = expanded_row(c.result(), c.batch());
      return batched_result(c, t - sum(exp(y) * t, c.attrs<DimAttrs>().dim + 1, true));
    }};

// log_softmax_backward(grad, output) = grad - exp(output) * sum(grad, dim), recorded as one op
// of its own, as PyTorch's _log_softmax_backward_data, for the reason softmax's gradient is
// (Note [softmax's gradient is one op], ops/scan.cc): under create_graph its node saves the
// incoming gradient and the result and reads nothing else, as PyTorch's
// LogSoftmaxBackwardDataBackward0.
struct LogSoftmaxBackward {
  static constexpr Input grad{0, "grad_output"}, output{1, "output"};
  static const OpSpec spec;
};
const OpSpec LogSoftmaxBackward::spec{
    "log_softmax_backward",
    {// PyTorch's: grad - (grad * output.exp()).sum(dim, true).
     {grad,
      {output},
      [](const Ctx& c) {
        return c.grad() - sum(c.grad() * exp(c[output]), c.attrs<DimAttrs>().dim, true);
      }},
     // PyTorch's: -grad_output.sum(dim, true) * output.exp() * grad.
     {output,
      {grad, output},
      [](const Ctx& c) {
        return -sum(c[grad], c.attrs<DimAttrs>().dim, true) * exp(c[output]) * c.grad();
      }}},
    {AliasKind::kPure, DimAttrs{0}, [](const OpArgs& a) {
       return log_softmax_backward(a[grad], a[output], a.attrs<DimAttrs>().dim);
     }}};
// Linear in grad, so its part is log_softmax_backward of grad's tangent; output's part is the
// derivative in output along its tangent, -exp(output) * output_t * sum(grad). Either tangent may
// be undefined (no term).
Tensor log_softmax_backward_tangent(const Tensor& g, const Tensor& y, const Tensor& gt,
                                    const Tensor& yt, int64_t dim) {
  Tensor t;
  if (gt.defined()) t = log_softmax_backward(gt, y, dim);
  if (yt.defined()) add_term(t, -sum(g, dim, true) * exp(y) * yt);
  return t;
}
const DeclareJvp log_softmax_backward_jvp{
    LogSoftmaxBackward::spec, [](const JvpContext& c) {
      return log_softmax_backward_tangent(
          c.primal(LogSoftmaxBackward::grad), c.primal(LogSoftmaxBackward::output),
          c.term_tangent(LogSoftmaxBackward::grad), c.term_tangent(LogSoftmaxBackward::output),
          c.attrs<DimAttrs>().dim);
    }};
// Note [Batched dims]: the same terms at dim + 1, the primals expanded to the batch.
const DeclareBatchedJvp log_softmax_backward_batched_jvp{
    LogSoftmaxBackward::spec, [](const JvpContext& c) {
      return batched_result(c, log_softmax_backward_tangent(
                                   expanded_row(c.primal(LogSoftmaxBackward::grad), c.batch()),
                                   expanded_row(c.primal(LogSoftmaxBackward::output), c.batch()),
                                   batched_at_least_1d(c.term_tangent(LogSoftmaxBackward::grad)),
                                   batched_at_least_1d(c.term_tangent(LogSoftmaxBackward::output)),
                                   c.attrs<DimAttrs>().dim + 1));
    }};

Tensor log_softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim) {
  Tensor out;
  {
    NoGradGuard values;
    TracePause one_op;  // a trace records log_softmax_backward, not the ops that compute it
    const Tensor g = grad.detach(), y = output.detach();
    out = g - exp(y) * sum(g, dim, true);
  }
  return record(LogSoftmaxBackward::spec, {&grad, &output}, std::move(out), DimAttrs{dim});
}

// loss = -(1/N) sum_i logp[i, t_i]; its gradient is a constant pattern times the (scalar)
// incoming gradient. The pattern needs only the targets and the shape.
Tensor nll_pattern(const Shape& shape, const std::vector<int64_t>& targets, DType dtype,
                   Device device) {
  return backend_for(device).nll_grad_pattern(shape, targets, 1.0 / static_cast<double>(shape[0]),
                                              dtype, device);
}

Tensor nll_loss_backward(const Tensor& grad, const Tensor& self,
                         const std::vector<int64_t>& targets);

// nll_loss(self, targets). The gradient is recorded as an op of its own with an edge to self
// (PyTorch's nll_loss_backward), so it stays differentiable in self: its derivative there is
// zero, and grad(grad(nll_loss(x), x), x) gives zeros, as in PyTorch, instead of "not
// reachable". Self is saved only for that edge; it is log_softmax's saved result in
// cross_entropy, so no new memory.
struct NllLoss {
  static constexpr Input self{0, "self"};
  static const OpSpec spec;
};
const OpSpec NllLoss::spec{
    "nll_loss",
    {{self,
      {self},
      [](const Ctx& c) {
        return nll_loss_backward(c.grad(), c[self], *c.attrs<TargetsAttrs>().targets);
      }}},
    {AliasKind::kPure, TargetsAttrs{},
     [](const OpArgs& a) { return nll_loss(a[self], *a.attrs<TargetsAttrs>().targets); }}};
const DeclareJvp nll_loss_jvp{NllLoss::spec, jvp_linear};
// Each row's loss of its tangent [N, C]: -(1/N) times the sum of its target entries, picked by a
// gather along dim 2 of the batched tangent (so that, as the forward, a -inf elsewhere in a row
// stays out of it).
const DeclareBatchedJvp nll_loss_batched_jvp{
    NllLoss::spec, [](const JvpContext& c) {
      const std::vector<int64_t>& targets = *c.attrs<TargetsAttrs>().targets;
      const auto n = static_cast<int64_t>(targets.size());
      const Tensor picked =
          gather(c.tangent(NllLoss::self), 2, batched_index(Index{{n, 1}, targets}, c.batch()));
      return mul(sum(reshape(picked, {c.batch(), n}), 1), -1.0 / static_cast<double>(n));
    }};

// nll_loss_backward(grad, self) = pattern * grad, with grad a scalar: d/dgrad is nll_loss of
// the incoming gradient, and d/dself is a constant zero.
struct NllLossBackward {
  static constexpr Input grad{0, "grad"}, self{1, "self"};
  static const OpSpec spec;
};
const OpSpec NllLossBackward::spec{
    "nll_loss_backward",
    {{grad, {}, [](const Ctx& c) { return nll_loss(c.grad(), *c.attrs<TargetsAttrs>().targets); }},
     {self, {}, [](const Ctx& c) { return zeros_like(c.grad()); }}},
    {AliasKind::kPure, TargetsAttrs{}, [](const OpArgs& a) {
       return nll_loss_backward(a[grad], a[self], *a.attrs<TargetsAttrs>().targets);
     }}};
const DeclareJvp nll_loss_backward_jvp{NllLossBackward::spec, jvp_linear};
// The pattern times each row's tangent of the (scalar) incoming gradient; constant in self.
const DeclareBatchedJvp nll_loss_backward_batched_jvp{
    NllLossBackward::spec, [](const JvpContext& c) {
      const Tensor& self = c.primal(NllLossBackward::self);
      const Tensor pattern =
          nll_pattern(self.shape(), *c.attrs<TargetsAttrs>().targets, self.dtype(), self.device());
      return mul(pattern, reshape(c.tangent_or_zeros(NllLossBackward::grad), {c.batch(), 1, 1}));
    }};

Tensor nll_loss_backward(const Tensor& grad, const Tensor& self,
                         const std::vector<int64_t>& targets) {
  const Tensor pattern = nll_pattern(self.shape(), targets, grad.dtype(), grad.device());
  Tensor out = backend_for(grad.device()).binary(BinaryKind::kMul, pattern, grad, self.shape());
  return record(NllLossBackward::spec, {&grad, &self}, out, [&] {
    return TargetsAttrs{std::make_shared<const std::vector<int64_t>>(targets)};
  });
}

// Checks [N, C] inputs and N targets in [0, C), naming `op` (nll_loss or cross_entropy, so a
// user of cross_entropy is not told about an op they never called).
void check_classification(const char* op, const Tensor& input,
                          const std::vector<int64_t>& targets) {
  check_defined(op, input, "input");
  AG_CHECK(input.dim() == 2, op, ": expected input [N, C], got ", input.describe());
  const int64_t n = input.shape()[0], classes = input.shape()[1];
  AG_CHECK(static_cast<int64_t>(targets.size()) == n && n > 0, op, ": ", targets.size(),
           " targets for input ", input.describe(), " (expected ", n, ")");
  for (size_t i = 0; i < targets.size(); ++i) {
    AG_CHECK(targets[i] >= 0 && targets[i] < classes, op, ": target ", targets[i], " at position ",
             i, " is out of range for ", classes, " classes (input ", input.describe(), ")");
  }
}

}  // namespace

Tensor log_softmax(const Tensor& a, int64_t dim) {
  check_defined("log_softmax", a, "input");
  dim = normalize_dim("log_softmax", dim, a);
  Tensor out = backend_for(a.device()).log_softmax(at_least_1d(a), dim);
  // Note [Dims of a 0-dim tensor]: over a 0-dim tensor's one element, log_softmax is 0.
  if (a.dim() == 0) out = out.alias_with_shape({});
  return record(LogSoftmax::spec, {&a}, out, DimAttrs{dim});
}

Tensor nll_loss(const Tensor& log_probs, const std::vector<int64_t>& targets) {
  check_classification("nll_loss", log_probs, targets);
  // Picks the target entries (as PyTorch does): a -inf elsewhere in a row must not turn into
  // 0 * -inf = NaN.
  Backend& be = backend_for(log_probs.device());
  Tensor out = be.unary(UnaryKind::kMulScalar, be.sum_all(be.gather_rows(log_probs, targets)),
                        -1.0 / static_cast<double>(log_probs.shape()[0]));
  return record(NllLoss::spec, {&log_probs}, out, [&] {
    return TargetsAttrs{std::make_shared<const std::vector<int64_t>>(targets)};
  });
}

Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets) {
  check_classification("cross_entropy", logits, targets);
  return nll_loss(log_softmax(logits, 1), targets);
}

}  // namespace ag::ops
