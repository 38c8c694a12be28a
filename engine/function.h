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

// Wires forward's outputs to a new CustomFunctionNode (shared by every Function<T>::apply).
TensorList wrap_custom_outputs(const FunctionInfo& info, BackwardFn backward,
                               const TensorList& inputs, TensorList outputs,
                               std::unique_ptr<FunctionState> state, TensorList to_save,
                               const TensorList& non_differentiable);

template <typename F>
class Function {
 public:
  static TensorList apply(const TensorList& inputs);
};

}  // namespace ag

#include "engine/function_impl.h"
