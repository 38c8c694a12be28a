#pragma once

#include <memory>

#include "engine/node.h"

namespace ag {

// The node at the end of every path: adds the incoming gradient into a leaf's .grad. Its
// topological_nr is 0 (Note [Topological number]). The leaf owns it; it refers to the leaf
// weakly, so a gradient for a leaf nobody holds any more is simply dropped.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(const std::shared_ptr<TensorImpl>& variable);
  TensorList apply(TensorList&& grads, const Call& call) override;
  std::string name() const override { return "AccumulateGrad"; }

 private:
  std::weak_ptr<TensorImpl> variable_;
};

// The leaf's AccumulateGrad, created on first use and kept for the leaf's lifetime.
std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);

// variable.grad += grad. With create_graph the sum is recorded (so .grad is differentiable);
// otherwise it is a plain value.
void accumulate_into_grad(TensorImpl& variable, const Tensor& grad, bool create_graph);

}  // namespace ag
