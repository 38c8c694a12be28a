#include "paper/workloads/forward_workloads.h"

#include <cmath>

#include "engine/autograd.h"
#include "engine/forward_ad.h"
#include "engine/functional.h"
#include "ops/ops.h"

namespace ag::paper {

Tensor forward_over_reverse_y_xx(const Mlp& mlp, const Tensor& x) {
  DualLevel level;
  const Tensor xd = make_dual(x, ops::ones_like(x));
  const Tensor y = mlp.forward(xd);
  const Tensor y_x = grad({y}, {xd}, GradArgs().grad_outputs({ops::ones_like(y)}))[0];
  return unpack_dual(y_x).tangent;
}

Tensor mlp_forward(const Mlp& mlp, const Tensor& x) { return mlp.forward(x); }

Tensor mlp_jvp(const Mlp& mlp, const Tensor& x, const Tensor& tangent) {
  DualLevel level;
  return unpack_dual(mlp.forward(make_dual(x, tangent))).tangent;
}

Tensor SmallNet::operator()(const Tensor& in) const {
  return ops::tanh(ops::linear(ops::tanh(ops::linear(in, w1)), w2));
}

SmallNet make_small_net(int width) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(width));
  return {ops::uniform({width, width}, -bound, bound, 461),
          ops::uniform({width, width}, -bound, bound, 462), ops::uniform({width}, -1, 1, 463)};
}

namespace {

func::Function as_function(const SmallNet& net) {
  return [&net](const TensorList& xs) { return TensorList{net(xs[0])}; };
}

}  // namespace

Tensor small_net_jacfwd(const SmallNet& net) {
  return func::jacfwd(as_function(net), {net.x})[0][0];
}
Tensor small_net_jacrev(const SmallNet& net) {
  return func::jacrev(as_function(net), {net.x})[0][0];
}

}  // namespace ag::paper
