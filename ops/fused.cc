// The fused formula kernels and the kernels that add a formula's value into a waiting gradient
// (ops/fused.h).
#include "ops/fused.h"

#include "engine/counters.h"
#include "ops/backend.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/slots.h"

namespace ag::ops {

// Note [Fused formula kernels]
// A derivative formula that chains elementwise ops reads and writes memory once per op:
// tanh_backward's derivative w.r.t. its result, grad * (-2 * result * grad_output), is three
// kernels and two temporaries as PyTorch writes it. The engine runs it as one kernel, one pass
// (Backend::scaled_product: a * ((b * scale) * c), the composed ops' order, so the same bits).
// When nothing records (grad mode off, or no input requires grad: a backward without
// create_graph, such as the hessian's final backward) that is all. Under create_graph it records
// one node, scaled_product, where PyTorch's graph holds three (mul_scalar, mul, mul) and saves
// their two temporaries: its three formulas are scaled_products again, so every later order of
// derivative stays one kernel per formula, and a backward through it runs three kernels where
// PyTorch's graph runs five. Values agree with the composed graph's to rounding (its formulas
// multiply in another order). A trace (engine/jit) records it as aten::scaled_product, one of the
// derivatives that are IR operators without being ops of the list (Note [The op list],
// ops/kinds.h), as nll_loss_backward is: a compiled step (Note [Compiled functions]) then runs the
// fused kernels too (seed 001's Tanh step with the final backward, compiled: 221 ops, 277 as
// composed ops, each one more pass over memory). For operands of different shapes it runs as the
// composed ops. Checked in ops/tests/cpu_kernels_test.cc, ops/tests/op_gradients_test.cc and
// engine/jit/compile_test.cc.

Tensor scaled_product(const Tensor& a, const Tensor& b, const Tensor& c, double scale) {
  if (!a.same_layout_as(b) || !a.same_layout_as(c)) return a * (scale * b * c);
  ++counters().fused_formulas;
  Tensor out = backend_for(a.device()).scaled_product(a, b, c, scale);
  return record(scaled_product_spec(), {&a, &b, &c}, std::move(out), ScalarAttrs{scale});
}

// Note [Sums fused into formulas] (engine/engine.cc): a result that broadcasts needs its sum_to
// first, so the operands must have sum's layout. The write is a new version of sum (which drops
// a known-zeros mark).
namespace {
bool add_binary_into(const Tensor& sum, BinaryKind kind, const Tensor& grad, const Tensor& result) {
  if (!sum.same_layout_as(grad) || !sum.same_layout_as(result)) return false;
  backend_for(sum.device()).sum_into_binary(sum, kind, grad, result);
  sum.bump_version();
  ++counters().fused_sums;
  return true;
}
}  // namespace

bool add_tanh_backward_into(const Tensor& sum, const Tensor& grad, const Tensor& result) {
  return add_binary_into(sum, BinaryKind::kTanhBackward, grad, result);
}

bool add_sigmoid_backward_into(const Tensor& sum, const Tensor& grad, const Tensor& result) {
  return add_binary_into(sum, BinaryKind::kSigmoidBackward, grad, result);
}

bool add_scaled_product_into(const Tensor& sum, const Tensor& a, const Tensor& b, const Tensor& c,
                             double scale) {
  if (!sum.same_layout_as(a) || !sum.same_layout_as(b) || !sum.same_layout_as(c)) return false;
  backend_for(sum.device()).sum_into_scaled_product(sum, a, b, c, scale);
  sum.bump_version();
  ++counters().fused_formulas;
  ++counters().fused_sums;
  return true;
}

}  // namespace ag::ops
