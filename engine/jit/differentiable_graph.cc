// Note [Differentiable graphs] (differentiable_graph.h).
#include "engine/jit/differentiable_graph.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "engine/call.h"
#include "engine/counters.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/jit/schema.h"
#include "engine/options.h"
#include "engine/saved_variable.h"
#include "engine/slot_masks.h"

namespace ag::jit {
namespace {

// The autograd node of one segment of a group.
class DifferentiableGraphBackward final : public ag::Node {
 public:
  DifferentiableGraphBackward(std::shared_ptr<const Gradient> gradient, EdgeList edges)
      : ag::Node(SeveralOps(), std::move(edges)), gradient_(std::move(gradient)) {}

  TensorList apply(TensorList&& grads, const Call& call) override;
  std::unique_ptr<SlotMasks> new_slot_masks() const override;
  // Given which of the node's edges count, which of its slots do (SegmentSlotMasks).
  std::vector<char> slotsLeadingTo(const std::vector<char>& edge_counts) const;
  std::string name() const override { return "DifferentiableGraphBackward"; }
  void release_saved() override {
    for (SavedVariable& s : saved_) {
      if (s.defined()) s.release();
    }
  }
  std::vector<ag::Node::SavedValue> saved_values() const override {
    std::vector<ag::Node::SavedValue> out;
    for (size_t j = 0; j < saved_.size(); ++j) {
      out.push_back(saved_[j].describe_as(gradient_->saved_names[j]));
    }
    return out;
  }
  void setSaved(std::vector<SavedVariable> saved) { saved_ = std::move(saved); }

 private:
  std::shared_ptr<const Gradient> gradient_;
  std::vector<SavedVariable> saved_;  // per Gradient::saved; undefined if not kept
};

// Per value of the gradient graph (segment inputs, then node outputs): whether its gradient
// leads, through the formulas, to a contribution e with `contribution[e]` set. Forward order: a
// node's output leads where one of its formulas' targets does.
std::vector<char> valuesLeadingTo(const Gradient& d, const std::vector<char>& contribution) {
  std::vector<char> leads(d.num_inputs + d.node_blocks.size(), 0);
  for (size_t e = 0; e < contribution.size(); ++e) {
    leads[d.contribution_input[e]] |= contribution[e];
  }
  for (size_t k = 0; k < d.node_blocks.size(); ++k) {
    for (size_t b = d.node_blocks[k].first; b < d.node_blocks[k].second; ++b) {
      leads[d.num_inputs + k] |= leads[d.blocks[b].target];
    }
  }
  return leads;
}

// Note [Nodes that stand for several ops] (engine/node.h): the node's edges are its
// contributions, and a slot counts iff its value leads to a contribution that counts.
std::vector<char> DifferentiableGraphBackward::slotsLeadingTo(
    const std::vector<char>& edge_counts) const {
  const Gradient& d = *gradient_;
  const std::vector<char> leads = valuesLeadingTo(d, edge_counts);
  std::vector<char> out(d.slots.size());
  for (size_t s = 0; s < out.size(); ++s) out[s] = leads[d.slots[s]];
  return out;
}

// The slot masks of one backward call over segments' nodes (engine/slot_masks.h), made by the
// first such node the call marks.
class SegmentSlotMasks final : public SlotMasks {
 public:
  const std::vector<char>& mark(const ag::Node& node,
                                const std::vector<char>& edge_counts) override {
    const auto* segment = dynamic_cast<const DifferentiableGraphBackward*>(&node);
    AG_CHECK(segment != nullptr, "internal error: '", node.name(),
             "' stands for several ops but is no DifferentiableGraphBackward, the one kind the "
             "slot masks know");
    masks_.push_back(segment->slotsLeadingTo(edge_counts));  // a deque: references stay valid
    const std::vector<char>& mask = masks_.back();
    some_slot_unused_ = some_slot_unused_ || std::count(mask.begin(), mask.end(), 0) > 0;
    return mask;
  }

  // A node that runs receives a gradient iff a root's gradient goes into a slot of it that
  // counts, or a node that receives one sends it there. Where every slot counts, every node
  // that runs does; else, parents before children (reverse post-order), the nodes that receive
  // nothing do not run, and their children stop waiting for them (which may leave those with
  // nothing in turn).
  void finish(Marks& marks) override {
    if (!some_slot_unused_) return;
    std::unordered_set<const ag::Node*> reached;
    for (const Edge& root : marks.roots()) {
      if (root.is_valid() && marks.uses_gradient(root)) reached.insert(root.function.get());
    }
    const std::vector<ag::Node*>& order = marks.post_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const ag::Node& node = **it;
      if (!marks.runs(node)) continue;
      if (reached.count(&node) == 0) {
        marks.cancel_run(node);
        continue;
      }
      for (const Edge& edge : node.next_edges()) {
        if (edge.is_valid() && marks.uses_gradient(edge)) reached.insert(edge.function.get());
      }
    }
  }

 private:
  std::deque<std::vector<char>> masks_;
  bool some_slot_unused_ = false;  // in some mask
};

std::unique_ptr<SlotMasks> DifferentiableGraphBackward::new_slot_masks() const {
  return std::make_unique<SegmentSlotMasks>();
}

TensorList DifferentiableGraphBackward::apply(TensorList&& grads, const Call& call) {
  const Gradient& d = *gradient_;
  const size_t num_inputs = d.num_inputs;
  const size_t num_values = num_inputs + d.node_blocks.size();
  // Which values' gradients this call needs, and which ops' own nodes would run at all (one of
  // their edges is on an executed path: Call::on_executed_path). With per_call_needs_input_grad
  // off, `needed` is only "requires grad", and an op whose node would not run must still not
  // read its saved values: they may have been written since ...
  std::vector<char> needs(d.contribution_input.size()), on_path(needs.size());
  for (size_t e = 0; e < needs.size(); ++e) {
    needs[e] = call.needs_input_grad(e);
    on_path[e] = call.on_executed_path(e);
  }
  const std::vector<char> needed = valuesLeadingTo(d, needs);
  const std::vector<char> executed = valuesLeadingTo(d, on_path);
  std::vector<char> defined(num_values, 0);
  // ... and which blocks run (newest node first: a gradient reached its node's output).
  for (size_t s = 0; s < d.slots.size(); ++s) defined[d.slots[s]] |= grads[s].defined();
  std::vector<char> runs(d.blocks.size(), 0);
  for (size_t k = d.node_blocks.size(); k-- > 0;) {
    if (!defined[num_inputs + k] || !executed[num_inputs + k]) continue;
    for (size_t b = d.node_blocks[k].first; b < d.node_blocks[k].second; ++b) {
      if (!needed[d.blocks[b].target]) continue;
      runs[b] = 1;
      defined[d.blocks[b].target] = 1;
    }
  }

  std::vector<IValue> frame(d.code->numSlots());
  for (size_t s = 0; s < d.slots.size(); ++s) frame[s] = std::move(grads[s]);
  std::vector<char> unpacked(d.saved.size(), 0);
  Counters& c = counters();
  for (size_t b = 0; b < d.blocks.size(); ++b) {
    if (!runs[b]) continue;
    const Gradient::Block& block = d.blocks[b];
    for (size_t r = 0; r < block.reads.size(); ++r) {
      const int j = block.reads[r];
      if (unpacked[j]) continue;
      const SavedVariable& s = saved_[j];
      AG_CHECK(s.defined() || s.released(), "internal error: '", d.saved_names[j],
               "' was not saved by DifferentiableGraphBackward but a formula needs it");
      frame[d.slots.size() + j] = s.unpack(*this, block.read_names[r], -1, block.op->c_str());
      unpacked[j] = 1;
    }
    ++c.formulas_evaluated;
    c.count_formula(*d.blocks[b].key);
  }
  std::vector<char> mask(d.instruction_block.size());
  for (size_t i = 0; i < mask.size(); ++i) {
    mask[i] = d.instruction_block[i] < 0 || runs[d.instruction_block[i]];
  }
  // One result per contribution, each sent as soon as eager would send it (Note [Contributions
  // in eager order]).
  TensorList out(d.contribution_input.size());
  size_t done = 0;
  for (size_t e = 0; e < out.size(); ++e) {
    d.code->run(frame, {}, &mask, done, d.contribution_after[e]);
    done = d.contribution_after[e];
    if (!needed[d.contribution_input[e]]) continue;
    Tensor grad = std::get<Tensor>(frame[d.contribution_slot[e]]);  // a copy: slots may repeat
    if (!call.send_now(e, grad)) out[e] = std::move(grad);
  }
  d.code->run(frame, {}, &mask, done, mask.size());
  return out;
}

// Values that a node of [first, last) reads and that are defined before `first`, in order of
// first use; and values defined in [first, last) that are read after `last` or returned.
Segment makeSegment(const Graph& body, const std::vector<Node*>& nodes, size_t first, size_t last,
                    const std::unordered_map<const Node*, size_t>& position) {
  auto inside = [&](const Node* n) {
    auto it = position.find(n);
    return it != position.end() && it->second >= first && it->second < last;
  };
  std::vector<const Node*> members(nodes.begin() + first, nodes.begin() + last);
  std::vector<const Value*> inputs, outputs;
  std::unordered_set<const Value*> seen;
  for (const Node* n : members) {
    for (const Value* v : n->inputs()) {
      if (!inside(v->node()) && seen.insert(v).second) inputs.push_back(v);
    }
  }
  for (const Node* n : members) {
    for (const Value* v : n->outputs()) {
      for (const Use& u : v->uses()) {
        if (u.user == body.returnNode() || !inside(u.user)) {
          outputs.push_back(v);
          break;
        }
      }
    }
  }
  return Segment(std::move(members), std::move(inputs), std::move(outputs));
}

}  // namespace

std::vector<Segment> segmentsOf(const Graph& body) {
  const std::vector<Node*> nodes = body.nodes();
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes.size(); ++i) position[nodes[i]] = i;
  // cut[i]: a segment ends after node i. Cut after the producer of any value that its own
  // segment reads and that escapes it, until no such value is left.
  std::vector<char> cut(nodes.size(), 0);
  std::vector<size_t> segment_of(nodes.size());
  // Whether `v` is read outside segment `s`, or returned, itself or through a view of it that
  // is. A returned view is a function of its base: written in place later, it rewrites its
  // base's history, as eager code does (ops/views.cc), so the base needs one too, as an output
  // of a node.
  std::function<bool(const Value*, size_t)> escapes = [&](const Value* v, size_t s) {
    for (const Use& u : v->uses()) {
      if (u.user == body.returnNode() || segment_of[position.at(u.user)] != s) return true;
      const OpSchema* schema = u.user->schema();
      const bool view_of_v = schema != nullptr && schema->written_inputs.empty() &&
                             schema->output_aliases_input == static_cast<int>(u.offset);
      if (view_of_v && escapes(u.user->output(0), s)) return true;
    }
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0, s = 0; i < nodes.size(); ++i) {
      segment_of[i] = s;
      s += cut[i];
    }
    for (size_t i = 0; i < nodes.size() && !changed; ++i) {
      for (const Value* v : nodes[i]->outputs()) {
        bool read_inside = false;
        for (const Use& u : v->uses()) {
          read_inside = read_inside || (u.user != body.returnNode() &&
                                        segment_of[position.at(u.user)] == segment_of[i]);
        }
        if (read_inside && escapes(v, segment_of[i])) {
          cut[i] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  std::vector<Segment> segments;
  for (size_t first = 0; first < nodes.size();) {
    size_t last = first;
    while (last < nodes.size() && !cut[last]) ++last;
    last = std::min(last + 1, nodes.size());
    segments.push_back(makeSegment(body, nodes, first, last, position));
    first = last;
  }
  return segments;
}

struct DifferentiableGraphOp::SegmentState {
  Segment segment;
  std::vector<int> frame_slot;  // per value number: its slot in the body's frame
  mutable std::mutex mutex;     // guards gradients
  mutable std::vector<std::pair<std::vector<ValueMeta>, std::shared_ptr<const Gradient>>>
      gradients;  // derived per value types (Note [Differentiable graphs])

  SegmentState(Segment s, const Code& body) : segment(std::move(s)) {
    for (size_t v = 0; v < segment.numValues(); ++v) {
      frame_slot.push_back(body.slotOf(segment.value(static_cast<int>(v))));
    }
  }

  std::shared_ptr<const Gradient> gradientFor(const std::vector<ValueMeta>& metas) const {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [key, gradient] : gradients) {
      if (key == metas) return gradient;
    }
    gradients.emplace_back(metas, differentiate(segment, metas));
    return gradients.back().second;
  }
};

DifferentiableGraphOp::DifferentiableGraphOp(const Node& group)
    : group_(group), body_(*group.subgraph()) {
  for (Segment& s : segmentsOf(*group.subgraph())) {
    segments_.push_back(std::make_unique<SegmentState>(std::move(s), body_));
  }
}

DifferentiableGraphOp::~DifferentiableGraphOp() = default;

std::vector<IValue> DifferentiableGraphOp::run(const std::vector<IValue>& inputs,
                                               const RunOptions& options) const {
  const Graph& body = *group_.subgraph();
  std::vector<IValue> frame(body_.numSlots());
  bool any_requires_grad = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    frame[i] = inputs[i];  // the body's inputs take the first slots
    if (options.observe) options.observe(body.inputs()[i], frame[i]);
    const Tensor* t = std::get_if<Tensor>(&inputs[i]);
    any_requires_grad = any_requires_grad || (t != nullptr && t->defined() && t->requires_grad());
  }
  if (!grad_enabled() || !any_requires_grad) {
    body_.run(frame, options);  // nothing to differentiate: the ops as they are
  } else {
    {
      NoGradGuard no_grad;  // the group's node stands for its ops
      body_.run(frame, options);
    }
    restoreViewFlags(inputs, frame);
    for (const auto& segment : segments_) wire(*segment, frame);
  }
  std::vector<IValue> outputs;
  for (const Value* out : body.outputs()) outputs.push_back(frame[body_.slotOf(out)]);
  return outputs;
}

// A view the body returns was made in the caller's grad mode, which is on here, not under the
// group's own NoGradGuard (Note [View flags follow the base]): like the eager view, it is made as
// the input it views was (Note [How a view was made], ops/views.h): by a view op with grad mode
// on, so that it may be written in place and gets a history regenerated from its base when the
// base is written later, unless it views a view of another kind (one made with grad mode off).
void DifferentiableGraphOp::restoreViewFlags(const std::vector<IValue>& inputs,
                                             std::vector<IValue>& frame) const {
  for (const Value* out : group_.subgraph()->outputs()) {
    const Tensor* t = std::get_if<Tensor>(&frame[body_.slotOf(out)]);
    if (t == nullptr || !t->defined() || !t->impl()->view_base) continue;
    TensorImpl& impl = *t->impl();
    bool is_input = false;
    CreationMeta made = CreationMeta::kDefault;
    for (const IValue& v : inputs) {
      const Tensor* in = std::get_if<Tensor>(&v);
      if (in == nullptr || !in->defined()) continue;
      is_input = is_input || in->impl().get() == &impl;
      const TensorImpl& input = *in->impl();
      if (input.view_base && input.creation_meta != CreationMeta::kDefault &&
          input.storage.get() == impl.storage.get()) {
        made = input.creation_meta;
      }
    }
    if (!is_input) impl.creation_meta = made;
  }
}

// Makes the segment's autograd node, attaches it to the values that require grad and saves what
// its live formulas read (Note [Differentiable graphs]).
void DifferentiableGraphOp::wire(const SegmentState& state, std::vector<IValue>& frame) const {
  const Segment& seg = state.segment;
  const size_t num_values = seg.numValues();
  std::vector<Tensor> values(num_values);
  std::vector<char> requires(num_values, 0);
  bool any = false;
  for (size_t v = 0; v < num_values; ++v) values[v] = std::get<Tensor>(frame[state.frame_slot[v]]);
  for (size_t i = 0; i < seg.inputs.size(); ++i) {
    requires[i] = values[i].defined() && values[i].requires_grad();
    any = any || requires[i];
  }
  if (!any) return;
  // As record() decides for each op: a result requires grad iff one of its inputs does.
  for (size_t k = 0; k < seg.nodes.size(); ++k) {
    for (int in : seg.node_inputs[k]) requires[seg.outputOf(k)] |= requires[in];
  }
  std::vector<ValueMeta> metas(num_values);
  for (size_t v = 0; v < num_values; ++v) {
    if (values[v].defined()) metas[v] = {true, TensorMeta::of(values[v])};
  }
  std::shared_ptr<const Gradient> gradient = state.gradientFor(metas);

  EdgeList edges;  // one per contribution to an input (Note [Contributions in eager order])
  for (int i : gradient->contribution_input) {
    edges.push_back(requires[i] ? gradient_edge(values[i]) : Edge());
  }
  auto node = std::make_shared<DifferentiableGraphBackward>(gradient, std::move(edges));
  std::unordered_set<const TensorImpl*> taken;  // inputs' tensors, and slots already attached
  for (size_t i = 0; i < seg.inputs.size(); ++i) {
    if (values[i].defined()) taken.insert(values[i].impl().get());
  }
  std::vector<char> is_slot(num_values, 0);
  for (size_t s = 0; s < gradient->slots.size(); ++s) {
    const int v = gradient->slots[s];
    is_slot[v] = 1;
    node->add_input_metadata(gradient->slot_meta[s]);
    if (!requires[v]) continue;
    Tensor& t = values[v];
    // An op that returned its input as is (sum_to to the same shape): a tensor of its own, so
    // that the input's history stays untouched (as custom Functions do).
    if (!taken.insert(t.impl().get()).second) {
      t = t.detach();
      frame[state.frame_slot[v]] = t;
    }
    TensorImpl& impl = *t.impl();
    impl.set_requires_grad(true);
    impl.grad_fn = node;
    impl.output_nr = static_cast<uint32_t>(s);
  }
  // Note [Guarded saves], block by block.
  const bool guard = current_options().guard_saves;
  std::vector<char> keep(gradient->saved.size(), 0);
  for (const Gradient::Block& b : gradient->blocks) {
    if (guard ? !requires[b.target] : !requires[b.source]) continue;
    for (int j : b.reads) keep[j] = 1;
  }
  std::vector<SavedVariable> saved(gradient->saved.size());
  Counters& c = counters();
  for (size_t j = 0; j < saved.size(); ++j) {
    const int v = gradient->saved[j];
    if (!keep[j] || !values[v].defined()) continue;
    saved[j] = SavedVariable(values[v], is_slot[v] && requires[v]);
    c.bytes_saved += static_cast<int64_t>(values[v].nbytes());
  }
  node->setSaved(std::move(saved));
}

}  // namespace ag::jit
