#include "ops/spec.h"

#include "engine/call.h"
#include "engine/counters.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/options.h"
#include "ops/ops.h"
#include "ops/views.h"

namespace ag::ops {

OpSpec::OpSpec(const char* name, std::initializer_list<SlotSpec> slots,
               std::initializer_list<FormulaSpec> formulas)
    : name_(name), slots_(slots) {
  for (const FormulaSpec& f : formulas) {
    uint64_t mask = 0;
    for (int slot : f.uses) mask |= uint64_t{1} << slot;
    formulas_.push_back({f.input, mask, f.fn});
    formula_keys_.emplace_back(name_ + ":" + f.input);
  }
  for (const SlotSpec& s : slots_) slot_keys_.emplace_back(name_ + ":" + s.name);
}

bool OpSpec::slot_needed(size_t j, const std::vector<bool>& requires) const {
  for (size_t i = 0; i < formulas_.size(); ++i) {
    if (requires[i] && (formulas_[i].uses_mask >> j & 1)) return true;
  }
  return false;
}

OpNode::OpNode(const OpSpec& spec, EdgeList edges, std::vector<Shape> input_shapes, OpAttrs attrs,
               std::vector<bool> input_requires_grad, bool guard_saves)
    : Node(std::move(edges)),
      spec_(spec),
      input_shapes_(std::move(input_shapes)),
      attrs_(std::move(attrs)),
      saved_(spec.num_slots()),
      input_requires_grad_(std::move(input_requires_grad)),
      guard_saves_(guard_saves) {}

void OpNode::save(size_t slot, const Tensor& value, bool is_output) {
  saved_[slot] = SavedVariable(value, is_output);
  Counters& c = counters();
  c.bytes_saved += static_cast<int64_t>(value.nbytes());
  c.count_save(spec_.slot_key(slot));
}

bool OpNode::keeps_slot(size_t j) const {
  return !guard_saves_ || spec_.slot_needed(j, input_requires_grad_);
}

void OpNode::release_saved() {
  for (SavedVariable& s : saved_) {
    if (s.defined()) s.release();
  }
}

TensorList OpNode::apply(TensorList&& grads, const Call& call) {
  TensorList out(num_outputs());
  BackwardContext ctx(*this, grads[0]);
  Counters& c = counters();
  for (size_t i = 0; i < out.size(); ++i) {
    if (!call.needs_input_grad(i)) continue;  // Note [Per-call view]
    Tensor g = spec_.formula(i)(ctx);
    ++c.formulas_evaluated;
    c.count_formula(spec_.formula_key(i));
    out[i] = g.shape() == input_shapes_[i] ? std::move(g) : sum_to(g, input_shapes_[i]);
  }
  return out;
}

Tensor BackwardContext::saved(size_t slot) const {
  const SavedVariable& s = node_.saved_[slot];
  // A formula only runs when its input requires grad, so its slots were saved (Note [Guarded
  // saves]) unless released; unpack() reports the released case.
  if (!s.defined() && !s.released()) {
    fail("internal error: '", node_.spec_.slot_key(slot).name(),
         "' was not saved but a formula needs it");
  }
  return s.unpack(node_, node_.spec_.slot(slot).name);
}

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor* t : inputs) {
    if (t->defined() && t->requires_grad()) return true;  // a view refreshes itself here
  }
  return false;
}

std::shared_ptr<OpNode> make_node(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                                  OpAttrs attrs, std::initializer_list<Tensor> from_forward,
                                  const Tensor* written) {
  EdgeList edges;
  edges.reserve(inputs.size());
  std::vector<Shape> shapes;
  shapes.reserve(inputs.size());
  std::vector<bool> requires;
  requires.reserve(inputs.size());
  for (const Tensor* t : inputs) {
    // An optional input (e.g. linear's bias) may be undefined: no edge, no gradient.
    edges.push_back(gradient_edge(*t));
    shapes.push_back(t->defined() ? t->shape() : Shape{});
    requires.push_back(t->defined() && t->requires_grad());
  }
  auto node = std::make_shared<OpNode>(spec, std::move(edges), std::move(shapes), std::move(attrs),
                                       std::move(requires), current_options().guard_saves);
  const Tensor* forward_values = from_forward.begin();
  for (size_t j = 0; j < spec.num_slots(); ++j) {
    const int source = spec.slot(j).source;
    if (source == kFromResult) continue;  // attach_output() saves these
    // A value the forward hands over after the node exists (mul_'s copy of self) is saved by
    // the op itself.
    if (source == kFromForward && forward_values == from_forward.end()) continue;
    const Tensor* value = source == kFromForward ? forward_values++ : inputs.begin()[source];
    if (!node->keeps_slot(j) || !value->defined()) continue;
    const bool aliases_written =
        written != nullptr && value->impl()->storage.get() == written->impl()->storage.get();
    node->save(j, aliases_written ? value->detach() : *value, false);
  }
  return node;
}

void attach_output(OpNode& node, const Tensor& result) {
  TensorImpl& out = *result.impl();
  out.requires_grad = true;
  out.grad_fn = node.shared_from_this();
  out.output_nr = node.add_input_metadata(TensorMeta::of(result));
  const OpSpec& spec = node.spec();
  for (size_t j = 0; j < spec.num_slots(); ++j) {
    if (spec.slot(j).source == kFromResult && node.keeps_slot(j)) node.save(j, result, true);
  }
}

Tensor record_node(const OpSpec& spec, std::initializer_list<const Tensor*> inputs, Tensor result,
                   OpAttrs attrs, std::initializer_list<Tensor> from_forward) {
  std::shared_ptr<OpNode> node = make_node(spec, inputs, std::move(attrs), from_forward);
  attach_output(*node, result);
  return result;
}

}  // namespace ag::ops
