#pragma once

// Recording: an op's backward node (OpNode) and record(), which builds it, saves what its rule
// needs (Note [Guarded saves], ops/spec.h) and reports the op to an active trace.

#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "engine/call.h"
#include "engine/grad_mode.h"
#include "engine/node.h"
#include "engine/saved_variable.h"
#include "ops/jvp.h"
#include "ops/slots.h"
#include "ops/spec.h"
#include "ops/trace_hook.h"

namespace ag::ops {

// An op's inputs' shapes, and what its node saved (Note [Small vectors]).
using InputShapes = SmallVector<Shape, 2>;
using SavedList = SmallVector<SavedVariable, 2>;

// The backward node of a built-in op: its spec plus what the forward kept.
class OpNode final : public Node {
 public:
  // One edge and one shape per input, in order (an undefined optional input, e.g. linear's
  // bias: no edge, an empty shape). Which inputs require grad, and `guard_saves`, decide which
  // slots are kept (keeps_slot()).
  OpNode(const OpSpec& spec, std::initializer_list<const Tensor*> inputs, OpAttrs&& attrs,
         bool guard_saves);
  TensorList apply(TensorList&& grads, const Call& call) override;
  std::string name() const override { return spec_.name(); }
  void release_saved() override;
  std::vector<SavedValue> saved_values() const override;

  const OpSpec& spec() const { return spec_; }
  const SavedList& saved() const { return saved_; }
  void save(size_t slot, const Tensor& value, bool is_output);
  // Note [Guarded saves]: whether slot j is kept, given which inputs require grad.
  bool keeps_slot(size_t j) const;
  // Note [Written through a view]: this in-place node wrote through a view, so its base's
  // history runs through it; a backward without retain_graph frees it whole.
  void mark_written_through_view() { written_through_view_ = freed_whole_ = true; }
  // Note [Written through a view]: a backward without retain_graph frees this node whole, so that
  // it refuses to run again (the base's history after a write through a view, as CopySlices).
  void mark_freed_whole_on_release() { freed_whole_ = true; }

 private:
  friend class BackwardContext;
  const OpSpec& spec_;
  InputShapes input_shapes_;
  OpAttrs attrs_;
  SavedList saved_;
  uint64_t input_requires_grad_ = 0;  // bit i: input i
  bool guard_saves_;
  bool written_through_view_ = false;
  bool freed_whole_ = false;  // refuses to run after release_saved()
  bool released_ = false;     // release_saved() ran (tracked only when freed_whole_)
};

// A node's formula reads what the node saved.
inline BackwardContext::BackwardContext(OpNode& node, const Tensor& grad, size_t formula)
    : spec_(node.spec_),
      grad_(grad),
      formula_(formula),
      input_shapes_(node.input_shapes_.data()),
      attrs_(node.attrs_),
      node_(&node) {}

// Whether any of these requires grad while grad mode is on (i.e. whether record() builds a node).
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);

// Builds the OpNode of `spec` applied to `inputs` and saves the needed slots that come from the
// inputs and the forward (Note [Guarded saves], ops/spec.h). An in-place op calls this before it
// writes, so a saved input that the write changes fails the version check in backward, as in
// PyTorch; the write target is `written`, the first input: its own slot is saved as a clone (Note
// [In-place saves]), and its other saved aliases are kept without history (no reference cycle
// through the new node, and the version check can only fail for them).
std::shared_ptr<OpNode> make_node(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                                  OpAttrs attrs, std::initializer_list<Tensor> from_forward,
                                  const Tensor* written = nullptr);

// Makes `result` the node's output and saves the needed slots that come from the result. The
// node comes as a shared_ptr to become result's grad_fn: a caller done with it moves it in,
// which costs no reference count update (shared_from_this() would cost an atomic one).
void attach_output(std::shared_ptr<OpNode> node, const Tensor& result);

// make_node + attach_output: record()'s slow half.
Tensor record_node(const OpSpec& spec, std::initializer_list<const Tensor*> inputs, Tensor result,
                   OpAttrs attrs, std::initializer_list<Tensor> from_forward);

// record() while a dual level is live, in the order of PyTorch's generated code: the result's
// history (if any), then its tangents, then the saves of the result. So a rule that reads the
// result reads it with its history (a tangent made from the result requires grad), and the saved
// result carries its tangent for formulas run inside the level (Note [Forward mode]).
Tensor record_with_tangents(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                            Tensor result, OpAttrs attrs,
                            std::initializer_list<Tensor> from_forward);

// Whether record() builds a node for these inputs. Most calls build none (grad mode off, or no
// input requires grad), so grad mode is tested inline before the call.
inline bool records_node(std::initializer_list<const Tensor*> inputs) {
  return grad_enabled() && any_requires_grad(inputs);
}

// Records `result` as the output of `spec` applied to `inputs` (one per formula, in order):
// if grad mode is on and some input requires grad, creates the OpNode, saves the needed slots
// and attaches it to the result. `from_forward` supplies the ForwardValue slots in order.
// Always inlined: most calls record nothing (the backward's own ops, inference), and as a call
// that case cost a visible part of a small op.
[[gnu::always_inline]] inline Tensor record(const OpSpec& spec,
                                            std::initializer_list<const Tensor*> inputs,
                                            Tensor result) {
  if (TraceHook* hook = trace_hook()) hook->record_op(spec, inputs, result, NoAttrs());
  if (__builtin_expect(forward_ad::live(), 0))
    return record_with_tangents(spec, inputs, std::move(result), NoAttrs(), {});
  if (!records_node(inputs)) return result;
  return record_node(spec, inputs, std::move(result), NoAttrs(), {});
}
// The attributes can be passed as a function that builds them only when a node is recorded (or
// traced): most calls record nothing, and some attributes (nll_loss's targets) are not free to
// copy.
template <typename MakeAttrs, typename = decltype(OpAttrs(std::declval<MakeAttrs&>()()))>
[[gnu::always_inline]] inline Tensor record(const OpSpec& spec,
                                            std::initializer_list<const Tensor*> inputs,
                                            Tensor result, MakeAttrs make_attrs,
                                            std::initializer_list<Tensor> from_forward = {}) {
  if (TraceHook* hook = trace_hook()) hook->record_op(spec, inputs, result, make_attrs());
  if (__builtin_expect(forward_ad::live(), 0))
    return record_with_tangents(spec, inputs, std::move(result), make_attrs(), from_forward);
  if (!records_node(inputs)) return result;
  return record_node(spec, inputs, std::move(result), make_attrs(), from_forward);
}
[[gnu::always_inline]] inline Tensor record(const OpSpec& spec,
                                            std::initializer_list<const Tensor*> inputs,
                                            Tensor result, OpAttrs attrs,
                                            std::initializer_list<Tensor> from_forward = {}) {
  if (TraceHook* hook = trace_hook()) hook->record_op(spec, inputs, result, attrs);
  if (__builtin_expect(forward_ad::live(), 0))
    return record_with_tangents(spec, inputs, std::move(result), std::move(attrs), from_forward);
  if (!records_node(inputs)) return result;
  return record_node(spec, inputs, std::move(result), std::move(attrs), from_forward);
}

}  // namespace ag::ops
