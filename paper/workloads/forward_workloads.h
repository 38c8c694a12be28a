// Issue 46's forward-mode workloads (engine/forward_ad.h, engine/functional.h), ours:
//   - seed 001's y_xx by forward-over-reverse: y_xx = H(x) 1 per sample, one Hessian-vector
//     product with v = ones (Note [Forward-over-reverse y_xx]);
//   - the jvp of seed 001's MLP forward along one tangent;
//   - jacfwd and jacrev of a small 16 -> 16 function, tanh(W2 tanh(W1 x)).
#pragma once

#include "engine/tensor.h"
#include "paper/workloads/hessian.h"

namespace ag::paper {

// Note [Forward-over-reverse y_xx]
// Seed 001's y_xx = grad(grad(y, x, ones, create_graph), x, ones) with y = mlp(x) of one output
// per sample: y_x is the gradient of sum(y), and the second grad contracts its Jacobian, the
// Hessian H of sum(y) w.r.t. x, with ones, so y_xx = H 1 (H is symmetric). Forward-over-reverse
// computes H 1 as the tangent of a gradient: inside a DualLevel, x carries the tangent ones, the
// backward formulas of grad(y, x, ones) are ops that carry tangents (Note [Forward mode]), and the
// gradient's tangent is y_xx. One forward and one backward, each with its tangents, against the
// nested grads' forward, backward with create_graph, and the backward of that backward.
Tensor forward_over_reverse_y_xx(const Mlp& mlp, const Tensor& x);

// The MLP's forward of x (x not requiring grad; the weights do, as a module's), and the tangent of
// its output along `tangent` (x's shape), by make_dual in a DualLevel.
Tensor mlp_forward(const Mlp& mlp, const Tensor& x);
Tensor mlp_jvp(const Mlp& mlp, const Tensor& x, const Tensor& tangent);

// f(x) = tanh(W2 tanh(W1 x)), x of `width` float32 elements, W1 and W2 [width, width] (not
// requiring grad) with PyTorch's Linear init range.
struct SmallNet {
  Tensor w1, w2, x;
  Tensor operator()(const Tensor& x) const;
};
SmallNet make_small_net(int width);
// Its [width, width] Jacobian at net.x: every column at once (jacfwd: one jvp with `width`
// batched tangents) or every row at once (jacrev: one vjp with `width` batched cotangents).
Tensor small_net_jacfwd(const SmallNet& net);
Tensor small_net_jacrev(const SmallNet& net);

}  // namespace ag::paper
