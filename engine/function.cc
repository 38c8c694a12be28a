#include "engine/function.h"

#include "engine/call.h"
#include "engine/counters.h"
#include "engine/error.h"

namespace ag {

TensorList BackwardCtx::saved_tensors() const {
  TensorList out;
  out.reserve(state_.saved.size());
  // unpack() needs the owner to re-attach saved outputs; the node is alive while it runs.
  auto owner = std::const_pointer_cast<Node>(node_.shared_from_this());
  for (size_t i = 0; i < state_.saved.size(); ++i) {
    const SavedVariable& s = state_.saved[i];
    out.push_back(s.defined() || s.released()
                      ? s.unpack(owner, node_.name(), "saved_tensors[" + std::to_string(i) + "]")
                      : Tensor());
  }
  return out;
}

bool BackwardCtx::needs_input_grad(size_t i) const {
  AG_CHECK(i < node_.num_outputs(), "Function '", node_.name(), "': needs_input_grad(", i,
           ") but forward had ", node_.num_outputs(), " inputs");
  return call_.needs_input_grad(i);
}

CustomFunctionNode::CustomFunctionNode(std::string name, BackwardFn backward, EdgeList edges)
    : Node(std::move(edges)), name_(std::move(name)), backward_(backward) {}

TensorList CustomFunctionNode::apply(TensorList&& grads, const Call& call) {
  BackwardCtx ctx(state_, *this, call);
  TensorList out = backward_(ctx, grads);
  AG_CHECK(out.size() == num_outputs(), "Function '", name_, "' backward returned ", out.size(),
           " gradients but its forward had ", num_outputs(), " inputs");
  Counters& c = counters();
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].defined()) continue;
    if (!next_edge(i).is_valid()) {  // a gradient for an input that does not require grad
      out[i] = Tensor();
      continue;
    }
    AG_CHECK(out[i].shape() == state_.input_shapes[i], "Function '", name_,
             "' backward returned a gradient of shape ", to_string(out[i].shape()), " for input ",
             i, " of shape ", to_string(state_.input_shapes[i]));
    // For custom Functions, each gradient returned counts as one formula evaluated.
    ++c.formulas_evaluated;
    ++c.formula_counts[name_ + ":" + std::to_string(i)];
  }
  return out;
}

void CustomFunctionNode::release_saved() {
  for (SavedVariable& s : state_.saved) {
    if (s.defined()) s.release();
  }
}

TensorList wrap_custom_outputs(const std::string& name, BackwardFn backward,
                               const TensorList& inputs, TensorList outputs,
                               std::unique_ptr<FunctionState> state, TensorList to_save,
                               const TensorList& non_differentiable) {
  bool any_requires = false;
  for (bool r : state->input_requires_grad) any_requires = any_requires || r;
  if (!grad_enabled() || !any_requires) return outputs;

  EdgeList edges;
  for (const Tensor& t : inputs) edges.push_back(gradient_edge(t));
  auto node = std::make_shared<CustomFunctionNode>(name, backward, std::move(edges));
  node->state() = std::move(*state);
  auto is_in = [](const Tensor& t, const TensorList& list) {
    for (const Tensor& x : list) {
      if (x.is_same(t)) return true;
    }
    return false;
  };
  for (Tensor& out : outputs) {
    AG_CHECK(out.defined(), "Function '", name, "' forward returned an undefined tensor");
    // An input returned as is becomes a new tensor sharing its storage, so that the input's
    // own history is left untouched.
    if (is_in(out, inputs)) out = out.detach();
    const uint32_t nr = node->add_input_metadata(TensorMeta::of(out));
    if (is_in(out, non_differentiable)) continue;
    out.impl()->requires_grad = true;
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
