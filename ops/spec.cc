#include "ops/spec.h"

#include <map>

#include "engine/accumulate_grad.h"
#include "engine/call.h"
#include "engine/counters.h"
#include "engine/error.h"
#include "engine/forward_ad.h"
#include "engine/grad_mode.h"
#include "engine/options.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace ag::ops {

namespace {

// Sets table[position] = index, growing the table with -1 (unused) as needed.
void note_slot(std::vector<int8_t>& table, size_t position, int index) {
  if (table.size() <= position) table.resize(position + 1, -1);
  table[position] = static_cast<int8_t>(index);
}

}  // namespace

OpSpec::OpSpec(const char* name, std::initializer_list<FormulaSpec> formulas, OpForward forward)
    : name_(name), forward_(std::move(forward)) {
  for (const FormulaSpec& f : formulas) {
    AG_CHECK(f.input.position == formulas_.size(), "OpSpec '", name_, "': the formula for '",
             f.input.name, "' is listed at position ", formulas_.size(),
             "; formulas must follow the op's inputs");
    uint64_t mask = 0;
    for (const Slot& used : f.uses) {
      int j = slot_index(used);
      if (j < 0) {  // first use: number it
        j = static_cast<int>(slots_.size());
        slots_.push_back(used);
        slot_keys_.emplace_back(name_ + ":" + used.name);
        switch (used.kind) {
          case Slot::Kind::kInput:
            note_slot(input_slot_, used.position, j);
            break;
          case Slot::Kind::kResult:
            result_slot_ = static_cast<int8_t>(j);
            break;
          case Slot::Kind::kForward:
            note_slot(forward_slot_, used.position, j);
            break;
        }
      }
      mask |= uint64_t{1} << j;
    }
    formulas_.push_back(
        {f.input.name, mask, f.fn, f.fuse, f.in_place, CounterKey(name_ + ":" + f.input.name)});
  }
  AG_CHECK(formulas_.size() <= 64, "OpSpec '", name_, "': more than 64 inputs");
  register_forward();
}

OpSpec::OpSpec(const char* name, std::initializer_list<Input> inputs, OpForward forward)
    : name_(name), has_derivative_(false), forward_(std::move(forward)) {
  for (const Input& input : inputs) {
    AG_CHECK(input.position == formulas_.size(), "OpSpec '", name_, "': input '", input.name,
             "' is listed at position ", formulas_.size());
    formulas_.push_back(
        {input.name, 0, nullptr, nullptr, nullptr, CounterKey(name_ + ":" + input.name)});
  }
  register_forward();
}

namespace {
std::map<std::string, const OpSpec*>& registry() {
  static std::map<std::string, const OpSpec*> specs;
  return specs;
}
}  // namespace

void OpSpec::register_forward() {
  if (forward_.call == nullptr) return;
  AG_CHECK(registry().emplace(name_, this).second, "OpSpec '", name_,
           "' is registered twice (Note [Op schema])");
}

const OpSpec* find_op_spec(const std::string& name) {
  const auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second;
}

std::vector<const OpSpec*> all_op_specs() {
  std::vector<const OpSpec*> out;
  for (const auto& [name, spec] : registry()) out.push_back(spec);
  return out;
}

OpSpec::OpSpec(const char* name, const OpSpec& of, OpForward forward)
    : name_(name),
      slots_(of.slots_),
      formulas_(of.formulas_),
      has_derivative_(of.has_derivative_),
      forward_(std::move(forward)),
      jvp_(of.jvp_),  // Note [In-place saves]: the derivative is asked, not restated
      input_slot_(of.input_slot_),
      forward_slot_(of.forward_slot_),
      result_slot_(of.result_slot_) {
  for (const Slot& s : slots_) slot_keys_.emplace_back(name_ + ":" + s.name);
  for (Formula& f : formulas_) f.key = CounterKey(name_ + ":" + f.input_name);
  register_forward();
}

int OpSpec::slot_index(const Slot& slot) const {
  switch (slot.kind) {
    case Slot::Kind::kInput:
      return slot.position < input_slot_.size() ? input_slot_[slot.position] : -1;
    case Slot::Kind::kResult:
      return result_slot_;
    case Slot::Kind::kForward:
      return slot.position < forward_slot_.size() ? forward_slot_[slot.position] : -1;
  }
  return -1;
}

bool OpSpec::slot_needed(size_t j, uint64_t requires) const {
  for (size_t i = 0; i < formulas_.size(); ++i) {
    if ((requires >> i & 1) && (formulas_[i].uses_mask >> j & 1)) return true;
  }
  return false;
}

OpNode::OpNode(const OpSpec& spec, std::initializer_list<const Tensor*> inputs, OpAttrs&& attrs,
               bool guard_saves)
    : Node(inputs),
      spec_(spec),
      attrs_(std::move(attrs)),
      saved_(spec.num_slots()),
      guard_saves_(guard_saves) {
  input_shapes_.reserve(inputs.size());
  for (const Tensor* t : inputs) {
    // An optional input (e.g. linear's bias) may be undefined: no edge (Node(inputs)), no
    // gradient, an empty shape. Pushed as a copy of the input's shape, not through `?:`, whose
    // result would be a temporary Shape to copy and then move.
    if (!t->defined()) {
      input_shapes_.emplace_back();
      continue;
    }
    if (t->requires_grad()) input_requires_grad_ |= uint64_t{1} << input_shapes_.size();
    input_shapes_.push_back(t->shape());
  }
}

void OpNode::save(size_t slot, const Tensor& value, bool is_output) {
  // Built in place over the slot's entry (empty, unless saved before): a SavedVariable is large,
  // and building a temporary, moving it in and destroying it costs more than the save itself.
  SavedVariable& entry = saved_[slot];
  entry.~SavedVariable();
  try {
    new (&entry) SavedVariable(value, is_output);
  } catch (...) {
    new (&entry) SavedVariable();  // the node stays destructible
    throw;
  }
  Counters& c = counters();
  c.bytes_saved += static_cast<int64_t>(value.nbytes());
  c.count_save(spec_.slot_key(slot));
}

std::vector<Node::SavedValue> OpNode::saved_values() const {
  std::vector<SavedValue> out;
  for (size_t j = 0; j < saved_.size(); ++j)
    out.push_back(saved_[j].describe_as(spec_.slot(j).name));
  return out;
}

bool OpNode::keeps_slot(size_t j) const {
  return !guard_saves_ || spec_.slot_needed(j, input_requires_grad_);
}

void OpNode::release_saved() {
  for (SavedVariable& s : saved_) {
    if (s.defined()) s.release();
  }
  // Note [The index is a saved value] (ops/index.cc).
  if (IndexAttrs* a = std::get_if<IndexAttrs>(&attrs_)) a->index.reset();
  released_ = freed_whole_;
}

namespace {

// Whether `from` carries a tangent at a live level where `to` carries none (Note [Written through a
// view]).
bool loses_a_tangent(const Tensor& from, const Tensor& to) {
  if (!forward_ad::live()) return false;
  for (int level = 0; level < forward_ad::num_levels(); ++level) {
    if (forward_ad::tangent(from, level).defined() && !forward_ad::tangent(to, level).defined())
      return true;
  }
  return false;
}

}  // namespace

TensorList OpNode::apply(TensorList&& grads, const Call& call) {
  if (released_) {  // Note [Written through a view]
    fail("Trying to backward through the graph a second time: '", name(),
         "' is part of the history of a base written through a view, which an earlier backward "
         "freed. Pass retain_graph to the first backward()/grad() call if you need to backward "
         "through the graph again.");
  }
  // The results go into the list the gradient came in, whose memory the engine keeps for its
  // next call (Note [Reused node states]).
  Tensor incoming = std::move(grads[0]);
  TensorList out = std::move(grads);
  out.assign(num_outputs(), Tensor());
  Counters& c = counters();
  size_t last = out.size();  // the last formula this call runs
  for (size_t i = out.size(); i-- > 0;) {
    if (call.needs_input_grad(i)) {
      last = i;
      break;
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (!call.needs_input_grad(i)) continue;  // Note [Per-call view]
    const BackwardContext ctx(*this, incoming, i);
    // Note [Sums fused into formulas] (engine/engine.cc): the formula's fusion hook adds its
    // value into the gradient waiting for it, and the edge gets no gradient (undefined).
    const FuseFn fuse = spec_.fusion(i);
    const Tensor* sum = fuse == nullptr ? nullptr : call.sum_target(i);
    const bool fused = sum != nullptr && fuse(*sum, ctx);
    // Note [Formulas in the incoming gradient]: no formula reads it after the last one.
    const InPlaceFn in_place = fused || i != last ? nullptr : spec_.in_place(i);
    const bool written = in_place != nullptr && values_unobserved() && incoming.defined() &&
                         held_only_here(incoming) && in_place(incoming, ctx);
    if (written) ++c.formulas_in_place;
    Tensor g = fused ? Tensor() : written ? std::move(incoming) : spec_.formula(i)(ctx);
    ++c.formulas_evaluated;
    c.count_formula(spec_.formula_key(i));
    if (g.defined() && g.shape() != input_shapes_[i]) g = sum_to(g, input_shapes_[i]);
    out[i] = std::move(g);
  }
  // Note [Written through a view]: PyTorch's CopySlices copies the incoming gradient into a new
  // tensor and writes the op's gradient for self into it, so under create_graph the base's
  // gradient depends on the incoming one even where that formula is a constant (copy_'s zeros),
  // and inside a dual level it carries the incoming one's tangent (zeros where written). The
  // write goes through a view, as CopySlices' does, so that its own derivative does the same at
  // the next order.
  if (written_through_view_ && out[0].defined() && incoming.defined() &&
      ((grad_enabled() && incoming.requires_grad() && !out[0].requires_grad()) ||
       loses_a_tangent(incoming, out[0]))) {
    Tensor through = contiguous_clone(incoming);
    Tensor whole = reshape(through, through.shape());
    copy_(whole, out[0]);
    out[0] = std::move(through);
  }
  return out;
}

Tensor BackwardContext::operator[](const Slot& slot) const {
  const int j = spec_.slot_index(slot);
  // Note [Derivative spec]: the uses list is a contract, checked on every read.
  if (j < 0 || !(spec_.formula_uses(formula_) >> j & 1)) {
    fail("internal error in '", spec_.name(), "': the formula for '", spec_.input_name(formula_),
         "' reads '", slot.name, "', which its uses list does not name");
  }
  if (node_ == nullptr) return slot_values_[j];
  const SavedVariable& s = node_->saved_[j];
  // A formula only runs when its input requires grad, so its slots were saved (Note [Guarded
  // saves]) unless released; unpack() reports the released case.
  if (!s.defined() && !s.released()) {
    fail("internal error: '", spec_.slot_key(j).name(), "' was not saved but a formula needs it");
  }
  return s.unpack(*node_, slot.name);
}

void BackwardContext::fail_attrs_type() const {
  fail("internal error in '", spec_.name(),
       "': a formula reads attributes of another type "
       "than the op recorded");
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
  // From this thread's pool of blocks of its size, with its control block (Note [Pooled tensor
  // metadata]): every recorded op makes one.
  auto node = std::allocate_shared<OpNode>(PoolAllocator<OpNode>(), spec, inputs, std::move(attrs),
                                           current_options().guard_saves);
  for (size_t j = 0; j < spec.num_slots(); ++j) {
    const Slot& slot = spec.slot(j);
    if (slot.kind == Slot::Kind::kResult) continue;  // attach_output() saves it
    AG_CHECK(slot.kind != Slot::Kind::kForward || slot.position < from_forward.size(),
             "internal error in '", spec.name(), "': its forward handed over no value for '",
             slot.name, "'");
    const Tensor& value = slot.kind == Slot::Kind::kForward ? from_forward.begin()[slot.position]
                                                            : *inputs.begin()[slot.position];
    if (!node->keeps_slot(j) || !value.defined()) continue;
    if (written != nullptr && slot.kind == Slot::Kind::kInput && slot.position == 0) {
      ForwardTracePause own_copy;          // the in-place op's own, not the program's
      node->save(j, clone(value), false);  // Note [In-place saves]: self before the write
      continue;
    }
    const bool aliases_written = written != nullptr && value.shares_storage_with(*written);
    // Two calls, not `aliases_written ? value.detach() : value`: that expression is a temporary
    // copy of `value` even when it is not detached, an atomic increment and decrement per save.
    if (aliases_written) {
      node->save(j, value.detach(), false);
    } else {
      node->save(j, value, false);
    }
  }
  return node;
}

OpNode& attach_history(std::shared_ptr<OpNode> node, const Tensor& result) {
  OpNode& n = *node;
  TensorImpl& out = *result.impl();
  out.set_requires_grad(true);  // an in-place op may move a leaf into the graph
  out.grad_fn = std::move(node);
  out.output_nr = n.add_input_metadata(TensorMeta::of(result));
  return n;
}

void save_result(OpNode& node, const Tensor& result) {
  const int j = node.spec().slot_index(Result());
  if (j >= 0 && node.keeps_slot(j)) node.save(j, result, true);
}

void attach_output(std::shared_ptr<OpNode> node, const Tensor& result) {
  save_result(attach_history(std::move(node), result), result);
}

Tensor record_node(const OpSpec& spec, std::initializer_list<const Tensor*> inputs, Tensor result,
                   OpAttrs attrs, std::initializer_list<Tensor> from_forward) {
  attach_output(make_node(spec, inputs, std::move(attrs), from_forward), result);
  return result;
}

}  // namespace ag::ops
