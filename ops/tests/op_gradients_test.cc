// Every op's first and second derivatives against central finite differences (float64), with
// broadcasting on the binary ops, plus PyTorch's special cases at the edges of the domain.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/gradcheck.h"
#include "engine/node.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_values;
using testing::leaf;

struct Case {
  std::string name;
  std::vector<Shape> shapes;
  DifferentiableFn fn;
};

Tensor pos(const Tensor& t) { return ops::add(ops::sigmoid(t), 0.5); }  // in (0.5, 1.5)

std::vector<Case> cases() {
  const Shape m23 = {2, 3}, v3 = {3}, c21 = {2, 1};
  using L = const TensorList&;
  return {
      {"add", {m23, v3}, [](L t) { return ops::add(t[0], t[1]); }},
      {"sub", {c21, v3}, [](L t) { return ops::sub(t[0], t[1]); }},
      {"mul", {m23, c21}, [](L t) { return ops::mul(t[0], t[1]); }},
      {"div", {m23, v3}, [](L t) { return ops::div(t[0], pos(t[1])); }},
      {"pow", {m23, v3}, [](L t) { return ops::pow(pos(t[0]), t[1]); }},
      {"add_scalar", {m23}, [](L t) { return ops::add(t[0], 3.0); }},
      {"mul_scalar", {m23}, [](L t) { return ops::mul(t[0], -2.5); }},
      {"pow_scalar", {m23}, [](L t) { return ops::pow(t[0], 3.0); }},
      {"pow_scalar_fractional", {m23}, [](L t) { return ops::pow(pos(t[0]), -1.5); }},
      {"neg", {m23}, [](L t) { return ops::neg(t[0]); }},
      {"exp", {m23}, [](L t) { return ops::exp(t[0]); }},
      {"log", {m23}, [](L t) { return ops::log(pos(t[0])); }},
      {"tanh", {m23}, [](L t) { return ops::tanh(t[0]); }},
      {"sigmoid", {m23}, [](L t) { return ops::sigmoid(t[0]); }},
      {"relu", {m23}, [](L t) { return ops::mul(ops::relu(t[0]), t[0]); }},
      {"threshold_backward",
       {m23, m23},
       [](L t) { return ops::threshold_backward(ops::mul(t[0], t[1]), t[1]); }},
      {"tanh_backward",
       {m23, m23},
       [](L t) { return ops::tanh_backward(ops::mul(t[0], t[1]), t[1]); }},
      {"sigmoid_backward",
       {m23, m23},
       [](L t) { return ops::sigmoid_backward(ops::mul(t[0], t[1]), t[1]); }},
      // tanh_backward's derivative w.r.t. its result, recorded as one scaled_product node whose
      // three operands all require grad (Note [Fused formula kernels]): its formulas and theirs.
      {"scaled_product",
       {m23, m23, m23},
       [](L t) {
         const Tensor y = ops::tanh_backward(t[0], t[1]);
         return grad({y}, {t[1]}, GradArgs().grad_outputs({t[2]}).create_graph())[0];
       }},
      // abs at smooth points (abs'(0) = 0 is pinned to PyTorch in selection_ops_test).
      {"abs", {m23}, [](L t) { return ops::mul(ops::abs(t[0]), t[0]); }},
      {"sqrt", {m23}, [](L t) { return ops::sqrt(pos(t[0])); }},
      {"clamp", {m23}, [](L t) { return ops::mul(ops::clamp(t[0], -0.4, 0.3), t[0]); }},
      {"clamp_min", {m23}, [](L t) { return ops::mul(ops::clamp_min(t[0], -0.4), t[0]); }},
      {"clamp_max", {m23}, [](L t) { return ops::mul(ops::clamp_max(t[0], 0.3), t[0]); }},
      {"maximum", {m23, v3}, [](L t) { return ops::exp(ops::maximum(t[0], t[1])); }},
      {"minimum", {c21, v3}, [](L t) { return ops::exp(ops::minimum(t[0], t[1])); }},
      {"where",
       {m23, m23, v3},
       [](L t) { return ops::exp(ops::where(ops::gt(t[0], t[1]), ops::mul(t[0], t[1]), t[2])); }},
      {"masked_fill",
       {m23, v3},
       [](L t) {
         return ops::exp(ops::masked_fill(ops::mul(t[0], t[1]), ops::gt(t[1], t[0]), 0.5));
       }},
      {"softmax", {m23}, [](L t) { return ops::softmax(t[0], 0); }},
      {"softmax_last", {{2, 3, 2}}, [](L t) { return ops::softmax(t[0], -1); }},
      {"cumsum", {{2, 3, 2}}, [](L t) { return ops::exp(ops::cumsum(t[0], 1)); }},
      {"index_select",
       {m23},
       [](L t) {
         return ops::exp(ops::index_select(t[0], 1, {2, 0, 2}));
       }},
      {"gather",
       {m23},
       [](L t) {
         return ops::exp(ops::gather(t[0], 0, {{2, 3}, {1, 0, 1, 1, 1, 0}}));
       }},
      {"scatter_add",
       {m23, {2, 2}},
       [](L t) {
         return ops::exp(ops::scatter_add(t[0], 1, {{2, 2}, {2, 2, 0, 1}}, t[1]));
       }},
      {"max_dim", {m23}, [](L t) { return ops::exp(ops::max(t[0], 1).values); }},
      {"min_dim_keepdim",
       {{2, 3, 2}},
       [](L t) { return ops::exp(ops::min(t[0], 1, true).values); }},
      {"cat",
       {m23, c21},
       [](L t) {
         return ops::exp(ops::cat({t[0], t[1], t[0]}, 1));
       }},
      {"stack",
       {m23, m23},
       [](L t) {
         return ops::exp(ops::stack({t[0], t[1]}, 1));
       }},
      {"sum", {m23}, [](L t) { return ops::sum(ops::mul(t[0], t[0])); }},
      {"sum_dim", {{2, 3, 2}}, [](L t) { return ops::sum(ops::mul(t[0], t[0]), 1); }},
      {"sum_dim_keepdim", {m23}, [](L t) { return ops::sum(ops::exp(t[0]), -1, true); }},
      {"mean", {m23}, [](L t) { return ops::mean(ops::mul(t[0], t[0])); }},
      {"mean_dim", {m23}, [](L t) { return ops::mean(ops::exp(t[0]), 0); }},
      {"sum_to",
       {{2, 3, 2}},
       [](L t) {
         return ops::sum_to(ops::exp(t[0]), {3, 1});
       }},
      {"broadcast_to",
       {c21},
       [](L t) {
         return ops::exp(ops::broadcast_to(t[0], {2, 2, 3}));
       }},
      {"reshape",
       {m23},
       [](L t) {
         return ops::exp(ops::reshape(t[0], {3, -1}));
       }},
      {"transpose", {{2, 3, 2}}, [](L t) { return ops::matmul(ops::transpose(t[0], 1, 2), t[0]); }},
      {"mm", {{2, 3}, {3, 4}}, [](L t) { return ops::mm(t[0], t[1]); }},
      {"bmm", {{2, 2, 3}, {2, 3, 2}}, [](L t) { return ops::bmm(t[0], t[1]); }},
      {"addmm", {{2}, {3, 2}, {2, 2}}, [](L t) { return ops::addmm(t[0], t[1], t[2]); }},
      {"linear", {{2, 3}, {4, 3}, {4}}, [](L t) { return ops::linear(t[0], t[1], t[2]); }},
      {"linear_3d", {{2, 2, 3}, {2, 3}}, [](L t) { return ops::linear(t[0], t[1]); }},
      {"matmul_vec_vec", {{3}, {3}}, [](L t) { return ops::matmul(t[0], t[1]); }},
      {"matmul_vec_mat", {{3}, {3, 2}}, [](L t) { return ops::matmul(t[0], t[1]); }},
      {"matmul_mat_vec", {{2, 3}, {3}}, [](L t) { return ops::matmul(t[0], t[1]); }},
      {"matmul_batched", {{2, 2, 3}, {3, 2}}, [](L t) { return ops::matmul(t[0], t[1]); }},
      {"matmul_broadcast", {{2, 3}, {2, 3, 2}}, [](L t) { return ops::matmul(t[0], t[1]); }},
      {"log_softmax", {m23}, [](L t) { return ops::log_softmax(t[0], 0); }},
      {"cross_entropy",
       {m23},
       [](L t) {
         return ops::cross_entropy(t[0], {2, 0});
       }},
      {"nll_loss",
       {m23},
       [](L t) {
         return ops::nll_loss(ops::log_softmax(t[0], 1), {1, 1});
       }},
      {"dropout", {m23}, [](L t) { return ops::dropout(ops::exp(t[0]), 0.5, true, 4); }},
      {"dropout2d", {{2, 3, 2}}, [](L t) { return ops::dropout2d(ops::exp(t[0]), 0.5, true, 4); }},
      {"clone", {m23}, [](L t) { return ops::exp(ops::clone(t[0])); }},
      {"add_",
       {m23, v3},
       [](L t) {
         Tensor a = ops::mul(t[0], 2.0);  // saves nothing the write could invalidate
         return ops::add_(a, ops::mul(t[1], t[1]));
       }},
      {"mul_",
       {m23, v3},
       [](L t) {
         Tensor a = ops::mul(t[0], 2.0);  // saves nothing the write could invalidate
         return ops::mul_(a, ops::exp(t[1]));
       }},
      {"copy_",
       {m23, v3},
       [](L t) {
         Tensor a = ops::mul(t[0], 2.0);  // saves nothing the write could invalidate
         return ops::mul(ops::copy_(a, ops::exp(t[1])), t[0]);
       }},
  };
}

TensorList inputs_for(const Case& c) {
  TensorList inputs;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    Tensor t = ops::uniform(c.shapes[i], -1, 1, 10 + i, DType::kFloat64);
    inputs.push_back(t.set_requires_grad(true));
  }
  return inputs;
}

using Check = std::function<GradcheckResult(const DifferentiableFn&, const TensorList&,
                                            const GradcheckOptions&)>;

void check_all(Check check) {
  for (const Case& c : cases()) {
    try {
      GradcheckResult r = check(c.fn, inputs_for(c), {});
      EXPECT_TRUE(r.passed) << c.name << ": " << r.report;
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.name << " threw: " << e.what();
    }
  }
}

TEST(OpGradients, FirstOrder) { check_all(gradcheck); }
TEST(OpGradients, SecondOrder) { check_all(gradgradcheck); }
// Every op's jvp rule (Note [Jvp rules], ops/jvp.h) against finite differences and reverse mode.
TEST(OpGradients, ForwardMode) {
  GradcheckOptions options;
  options.check_forward_ad = true;
  check_all([&options](const DifferentiableFn& fn, const TensorList& inputs,
                       const GradcheckOptions&) { return gradcheck(fn, inputs, options); });
}

// PyTorch: d/dx x^0 is 0 everywhere, also at x = 0 (not 0 * 0^-1 = NaN).
TEST(OpGradients, PowScalarZeroExponentAtZero) {
  Tensor x = leaf({0, 2}, {2});
  expect_values(grad({ops::sum(ops::pow(x, 0.0))}, {x})[0], {0, 0});
}

// As in PyTorch, the gradient of a ReLU network stays connected to its input: the second
// derivative is zero, computed through the graph, and a further backward reaches the weights.
TEST(OpGradients, ReluDoubleBackwardStaysConnected) {
  Tensor x = ops::uniform({4, 3}, -1, 1, 5, DType::kFloat64);
  Tensor w = ops::uniform({2, 3}, -1, 1, 6, DType::kFloat64);
  x.set_requires_grad(true);
  w.set_requires_grad(true);
  Tensor y = ops::sum(ops::relu(ops::linear(x, w)));
  Tensor y_x = grad({y}, {x}, GradArgs().create_graph())[0];
  Tensor y_xx = grad({ops::sum(y_x)}, {x}, GradArgs().create_graph())[0];  // no allow_unused needed
  expect_values(y_xx, std::vector<double>(12, 0.0));
  EXPECT_TRUE(y_xx.requires_grad());
  backward(ops::sum(y_xx));
  expect_values(w.grad(), std::vector<double>(6, 0.0));
}

// Note [Fused formula kernels]: tanh_backward's derivative w.r.t. its result runs as one kernel
// whether the second grad records or not; under create_graph it records one scaled_product
// node. Both give d2 tanh(x)/dx2 * v = -2 t (1 - t^2) v (t = tanh x), with the same bits, and
// the recorded node's own derivative gives d3 tanh(x)/dx3 * v = (6 t^2 - 2)(1 - t^2) v.
// 300x300 elements take the kernels' parallel split.
TEST(OpGradients, TanhSecondDerivativeIsOneKernelRecordedOrNot) {
  const int64_t n = 300 * 300;
  std::vector<double> xs(n), vs(n);
  for (int64_t i = 0; i < n; ++i) {
    xs[i] = -3.0 + 6.0 * static_cast<double>(i % 997) / 996.0;
    vs[i] = 0.5 + static_cast<double>(i % 13) / 8.0;
  }
  Tensor x = leaf(xs, {300, 300});
  const Tensor v = ops::from_vector(vs, {300, 300}, DType::kFloat64);
  std::vector<double> fused, recorded, third;
  for (bool create_graph : {false, true}) {
    const Tensor y = ops::tanh(x);
    const Tensor g = grad({y}, {x}, GradArgs().grad_outputs({ops::ones_like(y)}).create_graph())[0];
    reset_counters();
    const Tensor h = grad({g}, {x}, GradArgs().grad_outputs({v}).create_graph(create_graph))[0];
    EXPECT_EQ(counters().fused_formulas, 1);
    EXPECT_EQ(h.requires_grad(), create_graph);
    (create_graph ? recorded : fused) = h.to_vector();
    if (!create_graph) continue;
    // h = tanh_backward(scaled_product(v, t, 1, -2), t): three nodes where PyTorch's graph has
    // five (mul_scalar, mul, mul in place of scaled_product).
    ASSERT_EQ(h.grad_fn()->name(), "tanh_backward");
    const Node& product = *h.grad_fn()->next_edge(0).function;
    EXPECT_EQ(product.name(), "scaled_product");
    EXPECT_EQ(product.next_edges().size(), 3u);
    third = grad({ops::sum(h)}, {x})[0].to_vector();
  }
  ASSERT_EQ(fused.size(), static_cast<size_t>(n));
  ASSERT_EQ(third.size(), static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double t = std::tanh(xs[i]);
    ASSERT_NEAR(fused[i], -2.0 * t * (1.0 - t * t) * vs[i], 1e-12) << "at " << i;
    ASSERT_EQ(fused[i], recorded[i]) << "at " << i;
    ASSERT_NEAR(third[i], (6.0 * t * t - 2.0) * (1.0 - t * t) * vs[i], 1e-12) << "at " << i;
  }
}

// PyTorch's relu'(0) is 0.
TEST(OpGradients, ReluAtZero) {
  Tensor x = leaf({-1, 0, 2}, {3});
  expect_values(grad({ops::sum(ops::relu(x))}, {x})[0], {0, 0, 1});
}

// A gradient is summed back over broadcast dims, including leading ones.
TEST(OpGradients, BroadcastGradientsAreSummedBack) {
  Tensor a = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = leaf({10, 20}, {2, 1});
  Tensor c = leaf({7}, {});
  TensorList g = grad({ops::sum(ops::mul(ops::mul(a, b), c))}, {a, b, c});
  expect_values(g[0], {70, 70, 70, 140, 140, 140});
  expect_values(g[1], {6 * 7, 15 * 7});
  expect_values(g[2], {10 * 6 + 20 * 15});
}

}  // namespace
}  // namespace ag

namespace ag {
namespace {

// nll_loss picks the target entries, as PyTorch does: a -inf log-probability of another class
// leaves the loss and its gradient finite.
TEST(OpSemantics, NllLossIgnoresInfinitiesOutsideTheTargets) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor logp = ops::from_vector({-0.5, -inf, -1.0, -inf, -2.0, -0.25}, {2, 3}, DType::kFloat64);
  logp.set_requires_grad(true);
  Tensor loss = ops::nll_loss(logp, {0, 2});
  testing::expect_values(loss, {(0.5 + 0.25) / 2});
  testing::expect_values(grad({loss}, {logp})[0], {-0.5, 0, 0, 0, 0, -0.5});
}

// mean over no elements is NaN, as PyTorch's 0 / 0, and its gradient has no elements:
// torch.zeros(0, 3).mean(0) -> [nan, nan, nan]; .sum().backward() -> grad of shape [0, 3];
// torch.zeros(0).mean() -> nan; torch.zeros(3, 0).mean(0) has shape [0].
TEST(OpSemantics, MeanOverNoElementsIsNan) {
  Tensor x = ops::zeros({0, 3}, DType::kFloat64);
  x.set_requires_grad(true);
  const Tensor m = ops::mean(x, 0);
  ASSERT_EQ(m.shape(), Shape({3}));
  for (double v : m.to_vector()) EXPECT_TRUE(std::isnan(v));
  const Tensor g = grad({ops::sum(m)}, {x})[0];
  EXPECT_EQ(g.shape(), Shape({0, 3}));
  Tensor e = ops::zeros({0}, DType::kFloat64);
  e.set_requires_grad(true);
  const Tensor all = ops::mean(e);
  EXPECT_TRUE(std::isnan(all.to_vector()[0]));
  EXPECT_EQ(grad({all}, {e})[0].shape(), Shape({0}));
  EXPECT_EQ(ops::mean(ops::zeros({3, 0}, DType::kFloat64), 0).shape(), Shape({0}));
}

}  // namespace
}  // namespace ag
