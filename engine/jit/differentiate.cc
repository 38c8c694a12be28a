// Note [Gradient graphs] (differentiate.h).
#include "engine/jit/differentiate.h"

#include <algorithm>

#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/jit/schema.h"
#include "engine/jit/tracer.h"
#include "ops/ops.h"

namespace ag::jit {

Segment::Segment(std::vector<const Node*> nodes_, std::vector<const Value*> inputs_,
                 std::vector<const Value*> outputs_)
    : nodes(std::move(nodes_)), inputs(std::move(inputs_)), outputs(std::move(outputs_)) {
  for (size_t i = 0; i < inputs.size(); ++i) index_[inputs[i]] = static_cast<int>(i);
  for (size_t k = 0; k < nodes.size(); ++k) {
    std::vector<int> in;
    for (const Value* v : nodes[k]->inputs()) in.push_back(index_.at(v));
    node_inputs.push_back(std::move(in));
    index_[nodes[k]->output()] = outputOf(k);
  }
}

const Value* Segment::value(int i) const {
  const size_t n = inputs.size();
  return static_cast<size_t>(i) < n ? inputs[i] : nodes[i - n]->output();
}

bool ValueMeta::operator==(const ValueMeta& o) const {
  return defined == o.defined &&
         (!defined || (meta.shape == o.meta.shape && meta.dtype == o.meta.dtype &&
                       meta.device == o.meta.device));
}

namespace {

class Differentiator {
 public:
  Differentiator(const Segment& segment, const std::vector<ValueMeta>& metas)
      : seg_(segment), metas_(metas), d_(std::make_unique<Gradient>()) {
    d_->graph = std::make_unique<Graph>();
  }

  std::unique_ptr<const Gradient> run() {
    listBlocks();
    addInputs();
    TracingState tracer(*d_->graph);
    {
      ops::TraceHookGuard hook(&tracer);
      NoGradGuard no_grad;
      bindSaved(tracer);
      for (size_t k = seg_.nodes.size(); k-- > 0;) differentiateNode(k, tracer);
    }
    addOutputs();
    d_->code = std::make_unique<Code>(*d_->graph);
    for (const Value* out : d_->graph->outputs())
      d_->contribution_slot.push_back(d_->code->slotOf(out));
    std::unordered_map<const Node*, size_t> position;  // instructions up to and including it
    position[d_->graph->returnNode()] = 0;             // lastNode() of a graph with no nodes
    size_t count = 0;
    for (const Node* n : d_->graph->nodes()) position[n] = ++count;
    for (const Node* mark : contribution_marks_) d_->contribution_after.push_back(position[mark]);
    d_->instruction_block.reserve(d_->graph->numNodes());
    for (const Node* n : d_->graph->nodes()) {
      auto it = block_of_.find(n);
      d_->instruction_block.push_back(it == block_of_.end() ? -1 : it->second);
    }
    return std::move(d_);
  }

 private:
  const ops::OpSpec& specOf(size_t k) const { return *seg_.nodes[k]->schema()->spec; }

  // Every (node, input with a formula) of the segment, and the forward values they read.
  void listBlocks() {
    std::vector<int> saved_index(seg_.numValues(), -1);
    for (size_t k = 0; k < seg_.nodes.size(); ++k) {
      const ops::OpSpec& spec = specOf(k);
      const size_t first = d_->blocks.size();
      for (size_t i = 0; i < spec.num_inputs(); ++i) {
        const int target = seg_.node_inputs[k][i];
        if (!spec.differentiable(i) || !metas_[target].defined) continue;
        Gradient::Block b{
            static_cast<int>(k), i, seg_.outputOf(k), target, {}, &spec.formula_key(i),
            &spec.name(),        {}};
        for (size_t j = 0; j < spec.num_slots(); ++j) {
          if (!(spec.formula_uses(i) >> j & 1)) continue;
          const int v = slotValue(k, spec.slot(j));
          if (saved_index[v] < 0) {
            saved_index[v] = static_cast<int>(d_->saved.size());
            d_->saved.push_back(v);
          }
          b.reads.push_back(saved_index[v]);
          b.read_names.push_back(spec.slot(j).name);
        }
        d_->blocks.push_back(std::move(b));
      }
      d_->node_blocks.emplace_back(first, d_->blocks.size());
    }
  }

  // The value number a formula's slot names on node k.
  int slotValue(size_t k, const ops::Slot& slot) const {
    switch (slot.kind) {
      case ops::Slot::Kind::kInput:
        return seg_.node_inputs[k][slot.position];
      case ops::Slot::Kind::kResult:
        return seg_.outputOf(k);
      case ops::Slot::Kind::kForward:
        break;
    }
    throw IrError("differentiate: " + seg_.nodes[k]->kind() +
                  " hands its formulas a forward value; it cannot run in a DifferentiableGraph");
  }

  // Slots: the outputs, then the temporaries; then one input per slot gradient and per saved.
  void addInputs() {
    std::vector<char> is_slot(seg_.numValues(), 0);
    for (const Value* out : seg_.outputs) {
      d_->slots.push_back(seg_.indexOf(out));
      is_slot[d_->slots.back()] = 1;
    }
    for (int v : d_->saved) {
      if (static_cast<size_t>(v) >= seg_.inputs.size() && !is_slot[v]) {
        d_->slots.push_back(v);
        is_slot[v] = 1;
      }
    }
    Graph& g = *d_->graph;
    for (int v : d_->slots) {
      d_->slot_meta.push_back(metas_[v].meta);
      const std::string name = "grad_" + seg_.value(v)->name();
      slot_inputs_.push_back(g.addInput(Type::Tensor, g.isNameFree(name) ? name : ""));
      grad_of_[v] = slot_inputs_.back();
    }
    for (int v : d_->saved) {
      const std::string& name = seg_.value(v)->name();
      d_->saved_names.push_back(name);
      saved_inputs_.push_back(g.addInput(Type::Tensor, g.isNameFree(name) ? name : ""));
    }
  }

  Tensor placeholder(int v) {
    Tensor& p = placeholders_[v];
    if (!p.defined() && metas_[v].defined) {
      const TensorMeta& m = metas_[v].meta;
      p = ops::zeros(m.shape, m.dtype, m.device);
    }
    return p;
  }

  void bindSaved(TracingState& tracer) {
    for (size_t j = 0; j < d_->saved.size(); ++j)
      tracer.bind(placeholder(d_->saved[j]), saved_inputs_[j]);
  }

  void differentiateNode(size_t k, TracingState& tracer) {
    auto grad = grad_of_.find(seg_.outputOf(k));
    if (grad == grad_of_.end()) return;  // nothing reads its output: it never gets a gradient
    const ops::OpSpec& spec = specOf(k);
    const ops::OpAttrs attrs = toOpAttrs(*seg_.nodes[k]);
    std::vector<Shape> input_shapes;
    for (int v : seg_.node_inputs[k]) {
      input_shapes.push_back(metas_[v].defined ? metas_[v].meta.shape : Shape{});
    }
    // The incoming gradient: a tensor of its own (not traced), standing for the gradient so far.
    const TensorMeta& out = metas_[seg_.outputOf(k)].meta;
    const Tensor g = ops::zeros(out.shape, out.dtype, out.device);
    tracer.bind(g, grad->second);
    // As OpNode::apply: every formula first, then the sums, in input order.
    std::vector<std::pair<int, Value*>> contributions;
    for (size_t b = d_->node_blocks[k].first; b < d_->node_blocks[k].second; ++b) {
      const Gradient::Block& block = d_->blocks[b];
      std::vector<Tensor> slot_values(spec.num_slots());
      for (size_t j = 0; j < spec.num_slots(); ++j) {
        if (spec.formula_uses(block.input) >> j & 1) {
          slot_values[j] = placeholder(slotValue(k, spec.slot(j)));
        }
      }
      Node* mark = d_->graph->lastNode();
      Tensor r = spec.formula(block.input)(
          ops::BackwardContext(spec, g, block.input, input_shapes, attrs, slot_values.data()));
      if (r.defined() && r.shape() != input_shapes[block.input]) {
        r = ops::sum_to(r, input_shapes[block.input]);
      }
      if (r.defined()) contributions.emplace_back(block.target, tracer.valueOf(r));
      for (Node* n = mark->next(); n != d_->graph->returnNode(); n = n->next()) {
        block_of_[n] = static_cast<int>(b);
      }
    }
    for (const auto& [target, value] : contributions) {
      if (static_cast<size_t>(target) <
          seg_.inputs.size()) {  // Note [Contributions in eager order]
        d_->contribution_input.push_back(target);
        contribution_values_.push_back(value);
        contribution_marks_.push_back(d_->graph->lastNode());
        continue;
      }
      auto it = grad_of_.find(target);
      if (it == grad_of_.end()) {
        grad_of_[target] = value;
      } else {
        it->second = d_->graph->append(kinds::kAutogradAdd, {it->second, value})->output();
      }
    }
  }

  // One output per contribution to a segment input's gradient, in eager's order.
  void addOutputs() {
    d_->num_inputs = seg_.inputs.size();
    for (Value* v : contribution_values_) d_->graph->registerOutput(v);
  }

  const Segment& seg_;
  const std::vector<ValueMeta>& metas_;
  std::unique_ptr<Gradient> d_;
  std::vector<Value*> slot_inputs_, saved_inputs_;
  std::unordered_map<int, Value*> grad_of_;      // value number -> its gradient so far (not inputs)
  std::vector<Value*> contribution_values_;      // per Gradient::contribution_input
  std::vector<const Node*> contribution_marks_;  // per contribution: the last node before its send
  std::unordered_map<int, Tensor> placeholders_;
  std::unordered_map<const Node*, int> block_of_;
};

}  // namespace

std::unique_ptr<const Gradient> differentiate(const Segment& segment,
                                              const std::vector<ValueMeta>& metas) {
  return Differentiator(segment, metas).run();
}

}  // namespace ag::jit
