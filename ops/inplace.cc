// In-place ops: write into the first argument, bump its version counter, and rebase its history
// onto the new node (the old history becomes that node's input edge). The node and the inputs
// it saves are made before the write, so a saved value that the write changes fails the version
// check in backward, as in PyTorch (Note [In-place saves] in ops/spec.h). When the argument is a
// view, its base's history is rebased too (Note [In-place ops on views]).
#include "engine/error.h"
#include "engine/forward_ad.h"
#include "engine/grad_mode.h"
#include "engine/hooks.h"
#include "ops/backend.h"
#include "ops/checks.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/spec.h"
#include "ops/trace_hook.h"
#include "ops/views.h"

namespace ag::ops {
namespace {

// add_(self, other)
struct AddInplace {
  static constexpr Input self{0, "self"}, other{1, "other"};
  static const OpSpec spec;
};
const OpSpec AddInplace::spec{"add_",
                              {{self, {}, [](const Ctx& c) { return c.grad(); }},
                               {other, {}, [](const Ctx& c) { return c.grad(); }}},
                              in_place_forward<add_>()};
const DeclareJvp add_inplace_jvp{AddInplace::spec, jvp_from_formulas};

// copy_(self, src). The overwritten self gets a constant zero gradient (no history, as PyTorch's
// zeros_like).
struct CopyInplace {
  static constexpr Input self{0, "self"}, src{1, "src"};
  static const OpSpec spec;
};
const OpSpec CopyInplace::spec{"copy_",
                               {{self, {}, [](const Ctx& c) { return zeros_like(c.grad()); }},
                                {src, {}, [](const Ctx& c) { return c.grad(); }}},
                               in_place_forward<copy_>()};
const DeclareJvp copy_inplace_jvp{CopyInplace::spec, jvp_from_formulas};

// Note [Overlapping writes]
// As PyTorch's in-place ops (assert_no_internal_overlap, assert_no_partial_overlap): a write into
// a tensor that reaches one element at several indices (an expanded tensor) is refused, and so is
// one whose other operand shares part of its memory, laid out differently. Like PyTorch
// (get_overlap_status), only what is cheap to tell is refused: two dense layouts over
// intersecting runs of one storage, unless they are the same run with the same strides (a full
// overlap). Other strides over the same run are a partial overlap even where every element meets
// itself (a [3, 1] view of a [1, 3, 1] tensor, or strides that differ in a dim of size 1), as
// there. Gapped or self-overlapping layouts (x[::2] and x[1::2], an unfold) pass, as PyTorch's
// TOO_HARD does; Note [Operands read before the write] makes their result order-free.
void check_overlap(const char* op, const Tensor& a, const Tensor& b) {
  const Layout la = layout_of(a);
  AG_CHECK(!has_internal_overlap(la), op,
           ": unsupported operation: more than one element of the written-to tensor refers to a "
           "single memory location. Please clone() the tensor before performing the operation. "
           "(written-to: ",
           a.describe(), ", strides ", to_string(la.strides), ")");
  if (a.impl()->storage.get() != b.impl()->storage.get() || a.is_same(b)) return;
  const Layout lb = layout_of(b);
  if (a.numel() == 0 || b.numel() == 0 || !is_non_overlapping_and_dense(la) ||
      !is_non_overlapping_and_dense(lb)) {
    return;
  }
  const int64_t a_begin = la.offset, a_end = la.offset + a.numel();
  const int64_t b_begin = lb.offset, b_end = lb.offset + b.numel();
  const bool same_run = a_begin == b_begin && a_end == b_end;
  const bool partial = same_run ? la.strides != lb.strides : a_begin < b_end && b_begin < a_end;
  AG_CHECK(!partial, op, ": unsupported operation: some elements of the input tensor (",
           b.describe(), ") and the written-to tensor (", a.describe(),
           ") refer to a single memory location. Please clone() the tensor before performing "
           "the operation.");
}

// Whether `a` and `b` are the same elements of one storage, in the same order.
bool same_elements(const Tensor& a, const Tensor& b) {
  return a.shares_storage_with(b) && layout_of(a) == layout_of(b);
}

// `overlap_checked`: false for copy_ onto the very elements it reads, which has nothing to do and
// returns before PyTorch's overlap checks.
void check_inplace(const char* op, const Tensor& a, const Tensor& b, bool overlap_checked = true) {
  check_same_dtype_and_device(op, a, b);
  check_broadcastable_to(op, b.shape(), a.shape());
  if (overlap_checked) check_overlap(op, a, b);
  // PyTorch's check_inplace, in its order: a view's checks first, then whether `a` is a leaf, read
  // from the history it has now (a stale view of a base that gained a history since is refused
  // as a leaf, as in PyTorch).
  check_inplace_on_view(op, a, b);
  AG_CHECK(!(grad_enabled() && a.requires_grad() && !a.history_as_it_stands()), op,
           ": a leaf tensor that requires grad (", a.describe(),
           ") cannot be modified in place while grad mode is on; modify its detach() or use a "
           "no-grad guard");
}

// What the node of a write into `a` reads self through. PyTorch's CopySlices runs the op on the
// base's gradient at the view and sends the op's gradient for self straight to the base's history
// before the write, into the view's elements, past the view's own node: hooks there never see it
// (Note [Hooks], engine/hooks.h), and an as_strided in the view's history that reads elements its
// input does not hold (or an input of no elements, whose gradient is zeros: Note [Zero-size
// as_strided gradients], ops/view_ops.cc) does not drop them. So a write through a view with a
// history reads self through a fresh view of the base at the view's layout (Note [Views of any
// stride]), whose gradient lands where CopySlices puts it, not through the view's own node.
// That fresh view carries a's own tangents (Note [Forward mode]): a's formulas save self as it
// is before the write, tangent included, and a make_dual result's tangent is its own, not a view
// of its base's (found by the API model: a write into a make_dual result, then a backward inside
// the level).
Tensor self_of_write(const Tensor& a) {
  if (!a.impl()->view_base || a.grad_fn() == nullptr) return a;
  TracePause bookkeeping;  // history, not the program's op
  Tensor self = regenerated_view(Tensor(a.impl()->view_base), a, /*written=*/true);
  if (forward_ad::live()) forward_ad::copy_tangents(a, self);
  return self;
}

// Note [Operands read before the write]
// A write whose other operand shares the target's storage (not the target itself) reads a copy of
// that operand taken before the write: where the two overlap in a way the checks above let pass
// (a target that reaches one element at several indices, as an overlapping unfold, or a gapped
// layout meeting another: PyTorch's overlap checks answer TOO_HARD there), the result then does
// not depend on the order the kernel visits the elements in. The target itself is read as the
// write goes. The conformance scripts hand PyTorch the same copy (DEVIATIONS.md
// `too-hard-overlaps-read-first`).
Tensor operand_before_write(const Tensor& a, const Tensor& b) {
  return !b.shares_storage_with(a) || b.is_same(a) ? b : copy_of(b);
}

// The node of `spec` applied to (a, b), made before the write; null when nothing is recorded.
std::shared_ptr<OpNode> begin_inplace(const OpSpec& spec, const Tensor& a, const Tensor& b) {
  if (!records_node({&a, &b})) return nullptr;
  const Tensor self = self_of_write(a);
  return make_node(spec, {&self, &b}, NoAttrs(), {}, /*written=*/&a);
}

// After the write: bump the version, make `a` the node's output, rebase a view's base, give `a`
// the tangents of the write (Note [Forward mode]) and report the op to an active trace (Note
// [Tracing hook]).
Tensor& finish_inplace(const OpSpec& spec, const std::shared_ptr<OpNode>& node, Tensor& a,
                       const Tensor& b, const TensorList& tangents) {
  a.bump_version();
  // Note [Hooks] (engine/hooks.h): a's old hooks stay on its old node; its retains-grad hook
  // follows its history.
  const std::shared_ptr<Node> retained_on = node ? retains_grad_node(*a.impl()) : nullptr;
  if (node) attach_output(node, a);
  if (retained_on) move_retains_grad(*a.impl(), retained_on);
  if (node && a.impl()->view_base) node->mark_written_through_view();
  rebase_history_after_inplace(a, node != nullptr);
  if (!tangents.empty()) finish_tangents_of_write(a, tangents);
  trace(spec, {&a, &b}, a);
  return a;
}

}  // namespace

Tensor& add_(Tensor& a, const Tensor& b) {
  check_inplace("add_", a, b);
  // Summing gradients in place keeps their known zeros (Note [Known zeros]); the write drops
  // a's mark, so it is set again after.
  const Tensor::Zeros sum = Storage::sum_of(a.known_zeros(), b.known_zeros());
  std::shared_ptr<OpNode> node = begin_inplace(AddInplace::spec, a, b);
  const TensorList tangents = tangents_of_write(AddInplace::spec, a, b);
  backend_for(a.device()).binary_inplace(BinaryKind::kAdd, a, operand_before_write(a, b));
  Tensor& out = finish_inplace(AddInplace::spec, node, a, b, tangents);
  if (sum != Tensor::Zeros::kUnknown) out.mark_zeros(sum);
  return out;
}

Tensor& mul_(Tensor& a, const Tensor& b) {
  check_inplace("mul_", a, b);
  // mul's spec says what to save; self is saved as it is before the write (Note [In-place saves]).
  std::shared_ptr<OpNode> node = begin_inplace(mul_inplace_spec(), a, b);
  const TensorList tangents = tangents_of_write(mul_inplace_spec(), a, b);
  backend_for(a.device()).binary_inplace(BinaryKind::kMul, a, operand_before_write(a, b));
  return finish_inplace(mul_inplace_spec(), node, a, b, tangents);
}

Tensor& copy_(Tensor& a, const Tensor& src) {
  check_inplace("copy_", a, src, /*overlap_checked=*/!same_elements(a, src));
  std::shared_ptr<OpNode> node = begin_inplace(CopyInplace::spec, a, src);
  const TensorList tangents = tangents_of_write(CopyInplace::spec, a, src);
  backend_for(a.device()).copy(a, operand_before_write(a, src));
  return finish_inplace(CopyInplace::spec, node, a, src, tangents);
}

}  // namespace ag::ops
