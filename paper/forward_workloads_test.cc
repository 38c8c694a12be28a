// Issue 46's workloads (paper/workloads/forward_workloads.h) at small sizes, values only: seed
// 001's y_xx by forward-over-reverse equals the nested grads' to rounding (ReLU: zero either way;
// Tanh: not), the MLP's jvp along a unit tangent is that column of the per-sample Jacobian, and
// the small net's jacfwd equals its jacrev.
#include "paper/workloads/forward_workloads.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/autograd.h"
#include "ops/ops.h"

namespace ag::paper {
namespace {

HessianConfig small(Activation a) {
  HessianConfig c;
  c.batch = 8;
  c.hidden = 16;
  c.layers = 3;
  c.activation = a;
  return c;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tolerance) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], b[i], tolerance * (1 + std::abs(b[i]))) << "element " << i;
  }
}

TEST(ForwardWorkloads, ForwardOverReverseYxxEqualsTheNestedGrads) {
  for (const Activation a : {Activation::kRelu, Activation::kTanh}) {
    const HessianConfig c = small(a);
    const Mlp mlp = make_mlp(c);
    const Tensor x = make_hessian_input(c);
    const Tensor nested = nested_grads(mlp.forward(x), x);
    const Tensor forward = forward_over_reverse_y_xx(mlp, x);
    ASSERT_TRUE(forward.defined()) << activation_name(a);
    EXPECT_EQ(forward.shape(), x.shape());
    expect_close(forward.to_vector(), nested.to_vector(), 1e-5);
    if (a == Activation::kTanh) {
      double norm = 0;
      for (double v : nested.to_vector()) norm += std::abs(v);
      EXPECT_GT(norm, 1e-3) << "Tanh's y_xx should not be zero";
    }
  }
}

TEST(ForwardWorkloads, MlpJvpAlongAUnitTangentIsAJacobianColumn) {
  const HessianConfig c = small(Activation::kTanh);
  const Mlp mlp = make_mlp(c);
  const Tensor x = make_hessian_input(c).detach();
  const int column = 5;
  std::vector<double> unit(static_cast<size_t>(x.numel()), 0.0);
  for (int s = 0; s < c.batch; ++s) unit[static_cast<size_t>(s * c.input + column)] = 1.0;
  const Tensor tangent = ops::from_vector(unit, x.shape(), x.dtype(), x.device());
  const Tensor jvp = mlp_jvp(mlp, x, tangent);
  // Reverse mode: each sample's output depends on its own row only, so the gradient of sum(y)
  // w.r.t. x holds every sample's Jacobian row.
  Tensor leaf = x.detach();
  leaf.set_requires_grad(true);
  const Tensor g = grad({ops::sum(mlp_forward(mlp, leaf))}, {leaf})[0];
  const std::vector<double> rows = g.to_vector();
  std::vector<double> expected;
  for (int s = 0; s < c.batch; ++s)
    expected.push_back(rows[static_cast<size_t>(s * c.input + column)]);
  EXPECT_EQ(jvp.shape(), (Shape{c.batch, 1}));
  expect_close(jvp.to_vector(), expected, 1e-5);
}

TEST(ForwardWorkloads, SmallNetJacfwdEqualsJacrev) {
  const SmallNet net = make_small_net(16);
  const Tensor fwd = small_net_jacfwd(net);
  const Tensor rev = small_net_jacrev(net);
  EXPECT_EQ(fwd.shape(), (Shape{16, 16}));
  EXPECT_EQ(rev.shape(), (Shape{16, 16}));
  expect_close(fwd.to_vector(), rev.to_vector(), 1e-5);
}

}  // namespace
}  // namespace ag::paper
