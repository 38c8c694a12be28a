#include "engine/function.h"

#include "engine/call.h"
#include "engine/engine_ops.h"
#include "engine/error.h"
#include "engine/forward_ad.h"
#include "engine/grad_mode.h"

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

namespace {

bool is_in(const Tensor& t, const TensorList& list) {
  for (const Tensor& x : list) {
    if (x.is_same(t)) return true;
  }
  return false;
}

// The errors PyTorch raises for dirty inputs, all checked before any output changes so that a
// refused call leaves every tensor as it was. In PyTorch's order: per output that takes the node
// (when there is one, `recorded`), a leaf that requires grad, a view among several outputs, then
// the checks of an in-place op on a view; then dirty inputs that were not returned.
void check_dirty_outputs(const FunctionInfo& info, const TensorList& outputs,
                         const TensorList& non_differentiable, const TensorList& dirty,
                         bool recorded) {
  for (const Tensor& out : outputs) {
    if (!recorded || !out.defined() || !is_in(out, dirty) || is_in(out, non_differentiable)) {
      continue;
    }
    // As PyTorch's is_leaf() here, the history as it stands: forward's write made a view stale.
    AG_CHECK(!(!out.history_as_it_stands() && out.requires_grad()), "Function '", info.name(),
             "': a leaf tensor that requires grad (", out.describe(),
             ") was marked dirty (modified in place by forward) while grad mode is on; pass its "
             "detach() or a clone() to the Function instead");
    AG_CHECK(!(out.is_view() && outputs.size() > 1), "Function '", info.name(),
             "': an input marked dirty (", out.describe(),
             ") is a view of another tensor, so the Function cannot return more than one tensor "
             "(it returns ",
             outputs.size(),
             "); make sure the input is not a view (clone() it), or split the Function in two: one "
             "that modifies the input in place and returns it alone, and one for the other "
             "outputs");
    engine_ops::check_inplace_on_view(info.name().c_str(), out, /*recorded=*/true);
  }
  for (const Tensor& t : dirty) {
    AG_CHECK(is_in(t, outputs), "Function '", info.name(), "': a tensor marked dirty (",
             t.describe(),
             ") was not returned as an output; the inputs that forward modifies in place must all "
             "be outputs of the Function");
  }
}

// `out` (of `node` at `nr`) takes the node as its history.
void set_history(const Tensor& out, const std::shared_ptr<CustomFunctionNode>& node, uint32_t nr) {
  TensorImpl& impl = *out.impl();
  impl.set_requires_grad(true);
  impl.grad_fn = node;
  impl.output_nr = nr;
  // A view's history now reflects its storage as it is (PyTorch's set_gradient_edge).
  if (impl.view_base) impl.view_version.store(out.version(), std::memory_order_relaxed);
}

// An input returned as is: a new view of it, made with grad mode off as forward's own views are.
Tensor view_of_input(const Tensor& input) {
  NoGradGuard no_grad;
  return engine_ops::alias(input);
}

}  // namespace

EdgeList custom_function_edges(const TensorList& inputs, const FunctionState& state) {
  bool any_requires = false;
  for (bool r : state.input_requires_grad) any_requires = any_requires || r;
  EdgeList edges;
  if (!grad_enabled() || !any_requires) return edges;
  for (const Tensor& t : inputs) edges.push_back(gradient_edge(t));
  return edges;
}

TensorList wrap_custom_outputs(const FunctionInfo& info, BackwardFn backward,
                               const TensorList& inputs, EdgeList edges, TensorList outputs,
                               std::unique_ptr<FunctionState> state, TensorList to_save,
                               const TensorList& non_differentiable, const TensorList& dirty) {
  // Note [Forward mode]: a custom Function declares no jvp, so a tangent cannot pass through it.
  for (int level = 0; forward_ad::live() && level < forward_ad::num_levels(); ++level) {
    for (const Tensor& t : inputs) {
      AG_CHECK(forward_ad::suspended(level) || !forward_ad::tangent(t, level).defined(),
               "custom Function '", info.name(),
               "': forward-mode AD: an input carries a tangent, and the Function defines no jvp "
               "(PyTorch: jvp is not implemented for this Function)");
    }
  }
  // Note [Custom Function outputs]. Dirty inputs count as written, once per time they are listed
  // (as torch.autograd.Function's), before anything reads their versions.
  for (const Tensor& t : dirty) {
    if (t.defined()) t.bump_version();
  }
  const bool recorded = !edges.empty();
  if (!dirty.empty()) check_dirty_outputs(info, outputs, non_differentiable, dirty, recorded);
  std::shared_ptr<CustomFunctionNode> node;
  if (recorded) {
    node = std::make_shared<CustomFunctionNode>(info, backward, std::move(edges));
    node->state() = std::move(*state);
  }
  size_t num_differentiable = 0;
  for (Tensor& out : outputs) {
    AG_CHECK(out.defined() || !node, "Function '", info.name(),
             "' forward returned an undefined tensor");
    if (!out.defined()) continue;
    const bool is_input = is_in(out, inputs), is_dirty = is_in(out, dirty);
    const bool differentiable = node && !is_in(out, non_differentiable);
    const uint32_t nr = node ? node->add_input_metadata(TensorMeta::of(out)) : 0;
    if (!differentiable) {
      // No history: detached aliases of inputs, instead of changing their requires_grad.
      if (!out.requires_grad()) {
        if (is_input && !is_dirty) out = view_of_input(out);
      } else if (is_input) {
        out = out.detach();
      } else if (!out.is_view()) {
        out.detach_();
      }
    } else if (is_dirty) {
      // Written in place by forward: the output is the input, whose history moves behind the
      // node (for a view, its base's too), as an in-place op's result.
      out.set_grad(Tensor());
      set_history(out, node, nr);
      if (out.is_view()) engine_ops::rebase_history_after_write(out);
    } else {
      if (is_input) out = view_of_input(out);
      set_history(out, node, nr);
    }
    if (!(is_input && is_dirty) && out.is_view()) {
      out.impl()->creation_meta = CreationMeta::kInCustomFunction;
    }
    if (differentiable) ++num_differentiable;
  }
  if (num_differentiable > 1) {
    for (const Tensor& out : outputs) {
      if (out.defined() && out.is_view()) {
        out.impl()->creation_meta = CreationMeta::kMultiOutputNode;
      }
    }
  }
  if (!node) return outputs;
  std::vector<SavedVariable>& saved = node->state().saved;
  for (const Tensor& t : to_save) {
    bool is_output = false;
    for (const Tensor& out : outputs) is_output = is_output || out.is_same(t);
    saved.push_back(t.defined() ? SavedVariable(t, is_output && t.grad_fn() == node)
                                : SavedVariable());
    saved.back().mark_saved_by_function();  // Note [Saved values detached in place]
    if (t.defined()) counters().bytes_saved += static_cast<int64_t>(t.nbytes());
  }
  return outputs;
}

}  // namespace ag
