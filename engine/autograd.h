#pragma once

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <utility>

#include "engine/memory/small_vector.h"
#include "engine/options.h"
#include "engine/tensor.h"

namespace ag {

// The tensors grad() and backward() are given: a braced list ({y}, {a, b}) or a TensorList, read
// during the call and never kept. A std::vector per argument was a heap allocation apiece, a
// noticeable part of a tiny graph's call.
class TensorArgs {
 public:
  TensorArgs() = default;
  // The braced list's array lives until the end of the call's full-expression: long enough for
  // a parameter, which is all a TensorArgs may be.
  TensorArgs(std::initializer_list<Tensor> tensors)  // NOLINT: grad({y}, {x})
      : data_(std::data(tensors)), size_(tensors.size()) {}
  TensorArgs(const TensorList& tensors)  // NOLINT: grad(outputs, inputs)
      : data_(tensors.data()), size_(tensors.size()) {}
  TensorArgs(const Tensor* data, size_t size) : data_(data), size_(size) {}

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Tensor& operator[](size_t i) const { return data_[i]; }
  const Tensor* begin() const { return data_; }
  const Tensor* end() const { return data_ + size_; }

 private:
  const Tensor* data_ = nullptr;
  size_t size_ = 0;
};
// What the named arguments keep of the tensors they are given: a copy of the list, inline for a
// few tensors (Note [Small vectors]).
using KeptTensors = SmallVector<Tensor, 2>;

// The named arguments of grad() and backward(), PyTorch's keyword arguments as chainable setters:
//   grad({y}, {x}, GradArgs().grad_outputs({v}).create_graph())
//   backward({loss}, BackwardArgs().inputs({w, b}).retain_graph())
// Each setter has a getter of the same name.
template <typename Self>
class AutogradArgs {
 public:
  // Keep the graph's saved values for another backward through it (default: create_graph).
  Self& retain_graph(bool retain = true) {
    retain_graph_ = retain;
    return self();
  }
  // Record the backward pass itself, so that its results are differentiable again.
  Self& create_graph(bool create = true) {
    create_graph_ = create;
    return self();
  }
  // Engine options for this call only (default: current_options()).
  Self& engine_options(const EngineOptions& options) {
    engine_options_ = options;
    return self();
  }

  bool retain_graph() const { return retain_graph_.value_or(create_graph_); }
  bool create_graph() const { return create_graph_; }
  EngineOptions engine_options() const { return engine_options_.value_or(current_options()); }

 private:
  Self& self() { return static_cast<Self&>(*this); }
  std::optional<bool> retain_graph_;
  bool create_graph_ = false;
  std::optional<EngineOptions> engine_options_;
};

class GradArgs : public AutogradArgs<GradArgs> {
 public:
  // One gradient per output (the vector in the vector-Jacobian product); an undefined or missing
  // one means ones, for an output with one element.
  GradArgs& grad_outputs(TensorArgs grads) {
    grad_outputs_ = KeptTensors(grads.begin(), grads.end());
    return *this;
  }
  // An input no output depends on gets an undefined gradient instead of an error.
  GradArgs& allow_unused(bool allow = true) {
    allow_unused_ = allow;
    return *this;
  }

  TensorArgs grad_outputs() const { return {grad_outputs_.data(), grad_outputs_.size()}; }
  bool allow_unused() const { return allow_unused_; }

 private:
  KeptTensors grad_outputs_;
  bool allow_unused_ = false;
};

class BackwardArgs : public AutogradArgs<BackwardArgs> {
 public:
  // One gradient per tensor, as GradArgs::grad_outputs.
  BackwardArgs& grad_tensors(TensorArgs grads) {
    grad_tensors_ = KeptTensors(grads.begin(), grads.end());
    return *this;
  }
  // Accumulate only into these tensors (leaves or not), running only the part of the graph that
  // leads to them; their own grad_fn are not run. As in PyTorch, a non-leaf one is made to
  // retain grad (Tensor::retain_grad(), Note [Hooks] in engine/hooks.h): later calls through it
  // keep accumulating into its .grad.
  BackwardArgs& inputs(TensorArgs tensors) {
    inputs_ = KeptTensors(tensors.begin(), tensors.end());
    return *this;
  }

  TensorArgs grad_tensors() const { return {grad_tensors_.data(), grad_tensors_.size()}; }
  TensorArgs inputs() const { return {inputs_.data(), inputs_.size()}; }

 private:
  KeptTensors grad_tensors_;
  KeptTensors inputs_;
};

// torch.autograd.backward: accumulates d(sum of tensors * grad_tensors)/d(leaf) into each leaf's
// .grad (Note [Accumulating into .grad] in engine/accumulate_grad.h). A tensor named twice in
// inputs gets its gradient once. As in PyTorch, backward with create_graph makes a leaf's .grad
// hold a graph that refers back to the leaf, a reference cycle: reset it with set_grad(Tensor())
// when done.
void backward(TensorArgs tensors, const BackwardArgs& args = {});
inline void backward(const Tensor& t, const BackwardArgs& args = {}) {
  backward(TensorArgs(&t, 1), args);
}

// torch.autograd.grad: returns d(sum of outputs * grad_outputs)/d(input) for each input, without
// touching any .grad but those of tensors that retain grad (Note [Hooks]). An input no output
// depends on is an error unless allow_unused, in which case its result is an undefined Tensor.
TensorList grad(TensorArgs outputs, TensorArgs inputs, const GradArgs& args = {});

}  // namespace ag
