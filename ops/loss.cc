// log_softmax, nll_loss and cross_entropy (= nll_loss of log_softmax over classes).
#include "engine/error.h"
#include "ops/backend.h"
#include "ops/checks.h"
#include "ops/ops.h"
#include "ops/spec.h"

namespace ag::ops {
namespace {

using Ctx = BackwardContext;

// d/dx log_softmax = g - softmax * sum(g) along dim; softmax = exp(result).
const OpSpec kLogSoftmax("log_softmax", {{"result", kFromResult}},
                         {{"self", {0}, [](const Ctx& c) {
                             const int64_t dim = c.attrs().dim0;
                             return sub(c.grad(), mul(exp(c.saved(0)), sum(c.grad(), dim, true)));
                           }}});

// loss = -(1/N) sum_i logp[i, t_i]; its gradient is a constant pattern times the (scalar)
// incoming gradient, so nothing is saved: only the targets and the shape.
Tensor nll_pattern(const Shape& shape, const std::vector<int64_t>& targets, DType dtype,
                   Device device) {
  return backend_for(device).nll_grad_pattern(shape, targets, 1.0 / static_cast<double>(shape[0]),
                                              dtype, device);
}

const OpSpec kNllLoss("nll_loss", {}, {{"self", {}, [](const Ctx& c) {
                                          const Tensor& g = c.grad();
                                          return mul(nll_pattern(c.attrs().shape, c.attrs().targets,
                                                                 g.dtype(), g.device()),
                                                     g);
                                        }}});

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
  OpAttrs attrs;
  attrs.dim0 = dim;
  return record(kLogSoftmax, {&a}, backend_for(a.device()).log_softmax(a, dim), std::move(attrs));
}

Tensor nll_loss(const Tensor& log_probs, const std::vector<int64_t>& targets) {
  check_classification("nll_loss", log_probs, targets);
  // Picks the target entries (as PyTorch does): a -inf elsewhere in a row must not turn into
  // 0 * -inf = NaN.
  Backend& be = backend_for(log_probs.device());
  Tensor out = be.unary(UnaryKind::kMulScalar, be.sum_all(be.gather_rows(log_probs, targets)),
                        -1.0 / static_cast<double>(log_probs.shape()[0]));
  OpAttrs attrs;
  attrs.shape = log_probs.shape();
  attrs.targets = targets;
  return record(kNllLoss, {&log_probs}, out, std::move(attrs));
}

Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets) {
  check_classification("cross_entropy", logits, targets);
  return nll_loss(log_softmax(logits, 1), targets);
}

}  // namespace ag::ops
