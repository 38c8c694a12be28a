#pragma once

// Custom differentiable functions, like torch.autograd.Function:
//
//   struct Square : ag::Function<Square> {
//     static constexpr const char* name = "Square";
//     static ag::TensorList forward(ag::ForwardCtx& ctx, const ag::TensorList& in) {
//       ctx.save_for_backward({in[0]});
//       return {ag::ops::mul(in[0], in[0])};
//     }
//     static ag::TensorList backward(ag::BackwardCtx& ctx, const ag::TensorList& grads) {
//       if (!ctx.needs_input_grad(0)) return {ag::Tensor()};
//       return {ag::ops::mul(ag::ops::mul(grads[0], ctx.saved_tensors()[0]), 2.0)};
//     }
//   };
//   ag::TensorList y = Square::apply({x});
//
// backward's ctx answers needs_input_grad(i) for *this* backward call (Note [Per-call view]):
// true iff input i requires grad and lies on a path to an input requested by the current
// grad()/backward() call. PyTorch's ctx.needs_input_grad only reflects requires_grad.
//
// Note [Custom Function outputs]
// As PyTorch's _wrap_outputs, when grad mode is on and some input requires grad, each output
// forward returns gets the Function's node as its history, except those marked
// non-differentiable; and an output that is a view is of kind kInCustomFunction, which refuses
// writes through it and, once its base was written, the reading of its history (Note [How a view
// was made], ops/views.h): rebasing it would bypass the Function's backward. Three kinds of
// output differ:
// - an input returned as is is returned as a new view of it (PyTorch's view_as(self)), so that
//   the input keeps its own history; a write into the input later is then seen by the view
//   (`o = Ident(a); a.mul_(z)`: reading o's history raises, where a plain alias would silently
//   give the gradient through Ident with a's old value);
// - an input marked dirty (ctx.mark_dirty: forward wrote into it) is returned as itself, and its
//   history becomes the Function's node, as an in-place op's result: a leaf that requires grad
//   is refused, and a dirty view's base takes the write (Note [In-place ops on views]), which is
//   why a Function that writes into a view may return only that one output. Each dirty input's
//   version is bumped once more (once per time it is listed), whether forward wrote into it or
//   not;
// - with several differentiable outputs, every output that is a view is kMultiOutputNode.
// Without a node (grad mode off, or no input requires grad) an output keeps no history: an input
// that requires grad is returned as a detach() of it, one that does not as a view (a dirty one as
// itself).

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/counters.h"
#include "engine/node.h"
#include "engine/saved_variable.h"

namespace ag {

class Call;

// What forward() leaves for backward(); shared by every backward call through this node, so it
// is written only during forward.
struct FunctionState {
  std::vector<SavedVariable> saved;
  std::vector<bool> input_requires_grad;
  std::vector<Shape> input_shapes;
  std::map<std::string, double> saved_data;  // small non-tensor values (like ctx.saved_data)
  bool materialize_grads = true;             // ctx.set_materialize_grads
};

// What every node of one custom Function type shares: its name, and the counter keys of its
// gradients ("Name:0", "Name:1", ...), interned once per type instead of once per gradient.
class FunctionInfo {
 public:
  explicit FunctionInfo(std::string name);
  const std::string& name() const { return name_; }
  const CounterKey& gradient_key(size_t input) const;

 private:
  static constexpr size_t kPreinterned = 8;  // keys for inputs past these are made on first use
  std::string name_;
  mutable std::mutex mutex_;             // guards keys_ beyond the preinterned ones
  mutable std::deque<CounterKey> keys_;  // a deque: references stay valid as it grows
};

class ForwardCtx {
 public:
  explicit ForwardCtx(FunctionState& state) : state_(state) {}
  void save_for_backward(TensorList tensors) { to_save_ = std::move(tensors); }
  void mark_non_differentiable(const TensorList& outputs) { non_differentiable_ = outputs; }
  // The inputs forward wrote into in place, each to be returned as an output (Note [Custom
  // Function outputs]).
  void mark_dirty(const TensorList& inputs) { dirty_ = inputs; }
  // Whether backward receives zeros (the default, as in PyTorch) or undefined tensors for the
  // outputs that got no gradient.
  void set_materialize_grads(bool materialize) { state_.materialize_grads = materialize; }
  // In forward, "needed" can only mean "requires grad" (no backward call exists yet).
  bool needs_input_grad(size_t i) const { return state_.input_requires_grad.at(i); }
  std::map<std::string, double>& saved_data() { return state_.saved_data; }

 private:
  template <typename F>
  friend class Function;
  FunctionState& state_;
  TensorList to_save_;
  TensorList non_differentiable_;
  TensorList dirty_;
};

class BackwardCtx {
 public:
  BackwardCtx(const FunctionState& state, const Node& node, const Call& call)
      : state_(state), node_(node), call_(call) {}
  TensorList saved_tensors() const;  // version-checked
  bool needs_input_grad(size_t i) const;
  const std::map<std::string, double>& saved_data() const { return state_.saved_data; }
  const Node& node() const { return node_; }

 private:
  const FunctionState& state_;
  const Node& node_;
  const Call& call_;
};

using BackwardFn = TensorList (*)(BackwardCtx&, const TensorList&);

// The backward node of a custom Function.
class CustomFunctionNode final : public Node {
 public:
  CustomFunctionNode(const FunctionInfo& info, BackwardFn backward, EdgeList edges);
  TensorList apply(TensorList&& grads, const Call& call) override;
  std::string name() const override { return info_.name(); }
  void release_saved() override;
  std::vector<SavedValue> saved_values() const override;
  FunctionState& state() { return state_; }

 private:
  const FunctionInfo& info_;
  BackwardFn backward_;
  FunctionState state_;
};

// The gradient edges of a Function's node, taken before forward runs (forward may write into an
// input): none when it records no node (grad mode off, or no input requires grad).
EdgeList custom_function_edges(const TensorList& inputs, const FunctionState& state);

// Wires forward's outputs to a new CustomFunctionNode with `edges` when there are any (shared by
// every Function<T>::apply; Note [Custom Function outputs]).
TensorList wrap_custom_outputs(const FunctionInfo& info, BackwardFn backward,
                               const TensorList& inputs, EdgeList edges, TensorList outputs,
                               std::unique_ptr<FunctionState> state, TensorList to_save,
                               const TensorList& non_differentiable, const TensorList& dirty);

template <typename F>
class Function {
 public:
  static TensorList apply(const TensorList& inputs);
};

}  // namespace ag

#include "engine/function_impl.h"
