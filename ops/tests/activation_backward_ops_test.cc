// sigmoid's and tanh's derivatives as PyTorch records them: one op each, sigmoid_backward(grad,
// result) and tanh_backward(grad, result), whose own derivatives are derivatives.yaml's. Under
// create_graph the first derivative is one node with two inputs (the incoming gradient and the
// result), so a post-hook on it is handed two grad_inputs, as on PyTorch's
// SigmoidBackwardBackward0 and TanhBackwardBackward0; the first three derivatives are PyTorch's.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/autograd.h"
#include "engine/node.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_values;
using testing::leaf;
using testing::values;
using Values = std::vector<double>;

// What PyTorch 2.15 gives (float64), from:
//
//   x = torch.tensor([0.3, -1.2, 2.0], requires_grad=True)
//   v = torch.tensor([0.5, -1.5, 2.0], requires_grad=True)
//   w = torch.tensor([1.0, 0.25, -0.75])
//   y = f(x)                                  # torch.sigmoid, torch.tanh
//   g, = torch.autograd.grad(y, x, v, create_graph=True)
//   seen = []
//   g.grad_fn.register_hook(lambda gi, go: seen.extend(t.tolist() for t in gi))
//   h, h_v = torch.autograd.grad(g, [x, v], w, create_graph=True)
//   k = torch.autograd.grad(h.sum(), [x, v])
//   print(g.grad_fn.name(), len(g.grad_fn.next_functions), g, seen, h, h_v, k)
struct Expected {
  std::string node;  // g's grad_fn
  Values g, hook_grad, hook_result, h, h_v, k_x, k_v;
};

const Expected kSigmoid{"sigmoid_backward",
                        {0.12222915584537293, -0.26684166097020856, 0.20998717080701323},
                        {0.24445831169074586, 0.04447361016170143, -0.07874518905262996},
                        {-0.07444251681165903, -0.20139358762426324, 1.142391233933647},
                        {-0.01819809197778813, -0.035826799620271764, 0.11994375158422967},
                        {0.24445831169074586, 0.04447361016170143, -0.07874518905262996},
                        {-0.057050442618696635, 0.0044940567867875845, -0.05827750132230901},
                        {-0.03639618395557626, 0.023884533080181174, 0.05997187579211484}};

const Expected kTanh{"tanh_backward",
                     {0.4575684809133146, -0.4575299943111136, 0.14130164970632886},
                     {0.9151369618266292, 0.07625499905185226, -0.05298811863987332},
                     {-0.2913126124515909, -0.6252409552591164, 2.8920827402274507},
                     {-0.2665909391007272, -0.1907109938018525, 0.20432803114066947},
                     {0.9151369618266292, 0.07625499905185226, -0.05298811863987332},
                     {-0.6821530530505617, -0.248196298616786, -0.3789810976470939},
                     {-0.5331818782014544, 0.12714066253456832, 0.10216401557033473}};

void expect_pytorch_derivatives(Tensor (*f)(const Tensor&), const Expected& want) {
  SCOPED_TRACE(want.node);
  const Tensor x = leaf({0.3, -1.2, 2.0}, {3});
  const Tensor v = leaf({0.5, -1.5, 2.0}, {3});
  const Tensor w = values({1.0, 0.25, -0.75}, {3});
  const Tensor g = grad({f(x)}, {x}, GradArgs().grad_outputs({v}).create_graph())[0];
  expect_values(g, want.g, 1e-15);
  ASSERT_TRUE(g.grad_fn());
  EXPECT_EQ(g.grad_fn()->name(), want.node);
  EXPECT_EQ(g.grad_fn()->next_edges().size(), 2u);

  std::vector<TensorList> seen;
  g.grad_fn()->register_hook([&](const TensorList& grad_inputs, const TensorList&) {
    seen.push_back(grad_inputs);
    return TensorList{};
  });
  const TensorList h = grad({g}, {x, v}, GradArgs().grad_outputs({w}).create_graph());
  ASSERT_EQ(seen.size(), 1u);
  ASSERT_EQ(seen[0].size(), 2u) << "one grad_input per input of " << want.node;
  expect_values(seen[0][0], want.hook_grad, 1e-15);
  expect_values(seen[0][1], want.hook_result, 1e-14);
  expect_values(h[0], want.h, 1e-15);
  expect_values(h[1], want.h_v, 1e-15);

  const TensorList k = grad({ops::sum(h[0])}, {x, v});
  expect_values(k[0], want.k_x, 1e-14);
  expect_values(k[1], want.k_v, 1e-14);
}

TEST(ActivationBackwardOps, SigmoidDerivativesAreOneNodeWithPyTorchsValues) {
  expect_pytorch_derivatives(ops::sigmoid, kSigmoid);
}

TEST(ActivationBackwardOps, TanhDerivativesAreOneNodeWithPyTorchsValues) {
  expect_pytorch_derivatives(ops::tanh, kTanh);
}

// Without create_graph the derivative is the one kernel and records nothing (PyTorch's values,
// torch.autograd.grad(torch.sigmoid(x), x, torch.ones(3))).
TEST(ActivationBackwardOps, SigmoidGradientWithoutCreateGraphHasNoHistory) {
  const Tensor x = leaf({0.3, -1.2, 2.0}, {3});
  const Tensor g =
      grad({ops::sigmoid(x)}, {x}, GradArgs().grad_outputs({values({1, 1, 1}, {3})}))[0];
  EXPECT_FALSE(g.requires_grad());
  expect_values(g, {0.24445831169074586, 0.1778944406468057, 0.10499358540350662}, 1e-15);
}

}  // namespace
}  // namespace ag
