// In-place ops: write into the first argument, bump its version counter, and rebase its history
// onto the new node (the old history becomes that node's input edge). When the argument is a
// view, its base's history is rebased too (Note [In-place ops on views]).
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/options.h"
#include "ops/backend.h"
#include "ops/checks.h"
#include "ops/ops.h"
#include "ops/spec.h"
#include "ops/views.h"

namespace ag::ops {
namespace {

using Ctx = BackwardContext;

const OpSpec kAddInplace("add_", {},
                         {{"self", {}, [](const Ctx& c) { return c.grad(); }},
                          {"other", {}, [](const Ctx& c) { return c.grad(); }}});

// The old value of self is gone after the write, so the forward hands over a differentiable
// copy — made only when other's gradient can be needed (Note [Guarded saves]).
const OpSpec kMulInplace("mul_", {{"self_before", kFromForward}, {"other", 1}},
                         {{"self", {1}, [](const Ctx& c) { return mul(c.grad(), c.saved(1)); }},
                          {"other", {0}, [](const Ctx& c) { return mul(c.grad(), c.saved(0)); }}});

const OpSpec kCopyInplace("copy_", {},
                          {{"self", {}, [](const Ctx& c) { return mul(c.grad(), 0.0); }},
                           {"src", {}, [](const Ctx& c) { return c.grad(); }}});

void check_inplace(const char* op, const Tensor& a, const Tensor& b) {
  check_same_dtype_and_device(op, a, b);
  check_broadcastable_to(op, b.shape(), a.shape());
  AG_CHECK(!(grad_enabled() && a.is_leaf() && a.requires_grad()), op,
           ": a leaf tensor that "
           "requires grad (",
           a.describe(),
           ") cannot be modified in place while grad mode is on; "
           "modify its detach() or use a no-grad guard");
  check_inplace_on_view(op, a);
}

}  // namespace

Tensor& add_(Tensor& a, const Tensor& b) {
  check_inplace("add_", a, b);
  backend_for(a.device()).binary_inplace(BinaryKind::kAdd, a, b);
  a.bump_version();
  record(kAddInplace, {&a, &b}, a);
  rebase_base_after_inplace(a);
  return a;
}

Tensor& mul_(Tensor& a, const Tensor& b) {
  check_inplace("mul_", a, b);
  const bool keep_old =
      any_requires_grad({&a, &b}) && (!current_options().guard_saves || b.requires_grad());
  // clone() keeps self's history, so other's gradient stays differentiable in self (like
  // PyTorch's original_self = self.clone()); a plain copy would cut double backward there.
  Tensor before = keep_old ? clone(a) : Tensor();
  backend_for(a.device()).binary_inplace(BinaryKind::kMul, a, b);
  a.bump_version();
  record(kMulInplace, {&a, &b}, a, {}, {before});
  rebase_base_after_inplace(a);
  return a;
}

Tensor& copy_(Tensor& a, const Tensor& src) {
  check_inplace("copy_", a, src);
  backend_for(a.device()).copy(a, src);
  a.bump_version();
  record(kCopyInplace, {&a, &src}, a);
  rebase_base_after_inplace(a);
  return a;
}

}  // namespace ag::ops
