#include "engine/function.h"

#include "engine/call.h"
#include "engine/engine_ops.h"
#include "engine/error.h"

namespace ag {

TensorList BackwardCtx::saved_tensors() const {
  TensorList out;
  out.reserve(state_.saved.size());
  for (size_t i = 0; i < state_.saved.size(); ++i) {
    const SavedVariable& s = state_.saved[i];
    out.push_back(s.defined() || s.released()
                      ? s.unpack(node_, "saved_tensors", static_cast<int>(i))
                      : Tensor());
  }
  return out;
}

bool BackwardCtx::needs_input_grad(size_t i) const {
  AG_CHECK(i < node_.num_outputs(), "Function '", node_.name(), "': needs_input_grad(", i,
           ") but forward had ", node_.num_outputs(), " inputs");
  return call_.needs_input_grad(i);
}

FunctionInfo::FunctionInfo(std::string name) : name_(std::move(name)) {
  for (size_t i = 0; i < kPreinterned; ++i) keys_.emplace_back(name_ + ":" + std::to_string(i));
}

const CounterKey& FunctionInfo::gradient_key(size_t input) const {
  if (input < kPreinterned) return keys_[input];  // never moves: written only at construction
  std::lock_guard<std::mutex> lock(mutex_);
  while (keys_.size() <= input) keys_.emplace_back(name_ + ":" + std::to_string(keys_.size()));
  return keys_[input];
}

CustomFunctionNode::CustomFunctionNode(const FunctionInfo& info, BackwardFn backward,
                                       EdgeList edges)
    : Node(std::move(edges)), info_(info), backward_(backward) {}

TensorList CustomFunctionNode::apply(TensorList&& grads, const Call& call) {
  if (state_.materialize_grads) {
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) grads[i] = engine_ops::zeros(input_metadata()[i]);
    }
  }
  BackwardCtx ctx(state_, *this, call);
  TensorList out = backward_(ctx, grads);
  AG_CHECK(out.size() == num_outputs(), "Function '", info_.name(), "' backward returned ",
           out.size(), " gradients but its forward had ", num_outputs(), " inputs");
  Counters& c = counters();
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].defined()) continue;
    if (!next_edge(i).is_valid()) {  // a gradient for an input that does not require grad
      out[i] = Tensor();
      continue;
    }
    AG_CHECK(out[i].shape() == state_.input_shapes[i], "Function '", info_.name(),
             "' backward returned a gradient of shape ", to_string(out[i].shape()), " for input ",
             i, " of shape ", to_string(state_.input_shapes[i]));
    // For custom Functions, each gradient returned counts as one formula evaluated.
    ++c.formulas_evaluated;
    c.count_formula(info_.gradient_key(i));
  }
  return out;
}

std::vector<Node::SavedValue> CustomFunctionNode::saved_values() const {
  std::vector<SavedValue> out;
  for (size_t i = 0; i < state_.saved.size(); ++i) {
    out.push_back(state_.saved[i].describe_as("saved_tensors[" + std::to_string(i) + "]"));
  }
  return out;
}

void CustomFunctionNode::release_saved() {
  for (SavedVariable& s : state_.saved) {
    if (s.defined()) s.release();
  }
}

TensorList wrap_custom_outputs(const FunctionInfo& info, BackwardFn backward,
                               const TensorList& inputs, TensorList outputs,
                               std::unique_ptr<FunctionState> state, TensorList to_save,
                               const TensorList& non_differentiable) {
  bool any_requires = false;
  for (bool r : state->input_requires_grad) any_requires = any_requires || r;
  if (!grad_enabled() || !any_requires) return outputs;

  EdgeList edges;
  for (const Tensor& t : inputs) edges.push_back(gradient_edge(t));
  auto node = std::make_shared<CustomFunctionNode>(info, backward, std::move(edges));
  node->state() = std::move(*state);
  auto is_in = [](const Tensor& t, const TensorList& list) {
    for (const Tensor& x : list) {
      if (x.is_same(t)) return true;
    }
    return false;
  };
  for (Tensor& out : outputs) {
    AG_CHECK(out.defined(), "Function '", info.name(), "' forward returned an undefined tensor");
    // An input returned as is becomes a new tensor sharing its storage, so that the input's
    // own history is left untouched.
    if (is_in(out, inputs)) out = out.detach();
    const uint32_t nr = node->add_input_metadata(TensorMeta::of(out));
    if (is_in(out, non_differentiable)) continue;
    out.impl()->set_requires_grad(true);
    out.impl()->grad_fn = node;
    out.impl()->output_nr = nr;
  }
  std::vector<SavedVariable>& saved = node->state().saved;
  for (const Tensor& t : to_save) {
    bool is_output = false;
    for (const Tensor& out : outputs) is_output = is_output || out.is_same(t);
    saved.push_back(t.defined() ? SavedVariable(t, is_output && t.grad_fn() == node)
                                : SavedVariable());
    if (t.defined()) counters().bytes_saved += static_cast<int64_t>(t.nbytes());
  }
  return outputs;
}

}  // namespace ag
