// The ops that selection and slicing make useful (abs, sqrt, clamp, maximum/minimum, where,
// masked_fill, softmax, cumsum): values, gradients and second derivatives pinned to PyTorch
// 2.15, at the points where PyTorch's formulas make a choice (abs'(0), sqrt'(0), clamp at its
// bounds, ties of maximum/minimum, NaN), and their errors. The numbers come from
// selection_ops_goldens.py beside this file (float64; each case is named after its line there).
// Smooth points are gradchecked in op_gradients_test.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/autograd.h"
#include "engine/forward_ad.h"
#include "engine/node.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::error_of;
using testing::expect_values;
using testing::leaf;
using testing::values;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// The gradients of sum(y * w) w.r.t. xs.
TensorList grads_of(const Tensor& y, const Tensor& w, const TensorList& xs,
                    bool create_graph = false) {
  return grad({ops::sum(ops::mul(y, w))}, xs, GradArgs().create_graph(create_graph));
}

// Elementwise equality that counts NaN == NaN and inf == inf.
void expect_exactly(const Tensor& t, const std::vector<double>& expected) {
  const std::vector<double> got = t.to_vector();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << ": " << got[i];
    } else if (std::isinf(expected[i])) {
      EXPECT_EQ(got[i], expected[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], expected[i], 1e-12) << "element " << i;
    }
  }
}

const std::vector<double> kW6 = {0.5, -1.0, 2.0, 1.5, -0.25, 3.0};

TEST(SelectionOps, AbsGradientIsZeroAtZero) {  // "abs"
  Tensor x = leaf({-2.0, -0.5, 0.0, 1.5}, {4});
  const Tensor y = ops::abs(x);
  expect_values(y, {2.0, 0.5, 0.0, 1.5});
  const Tensor g = grad({ops::sum(y)}, {x}, GradArgs().create_graph())[0];
  expect_values(g, {-1.0, -1.0, 0.0, 1.0});
  // "abs second": zeros, computed through the graph (sign's derivative is 0).
  const Tensor gg = grad({ops::sum(ops::mul(g, values({1, 2, 3, 4}, {4})))}, {x})[0];
  expect_values(gg, {0, 0, 0, 0});
}

TEST(SelectionOps, SqrtGradientIsInfAtZero) {  // "sqrt"
  Tensor x = leaf({0.0, 0.25, 4.0}, {3});
  const Tensor y = ops::sqrt(x);
  expect_values(y, {0.0, 0.5, 2.0});
  const Tensor g = grad({ops::sum(y)}, {x}, GradArgs().create_graph())[0];
  expect_exactly(g, {kInf, 1.0, 0.25});
  // The second derivative of sum(g[1:]): g's first element weighted by 0, as PyTorch's slice.
  const Tensor gg = grad({ops::sum(ops::mul(g, values({0, 1, 1}, {3})))}, {x})[0];
  expect_exactly(gg, {kNaN, -2.0, -0.03125});
}

TEST(SelectionOps, ClampPassesTheGradientAtItsBounds) {  // "clamp", "clamp_min", "clamp_max"
  const std::vector<double> xs = {-2.0, -1.0, 0.0, 1.0, 2.0};
  const Tensor w = values({1, 2, 3, 4, 5}, {5});
  Tensor x = leaf(xs, {5});
  expect_values(ops::clamp(x, -1, 1), {-1.0, -1.0, 0.0, 1.0, 1.0});
  expect_values(grads_of(ops::clamp(x, -1, 1), w, {x})[0], {0.0, 0.0, 3.0, 0.0, 0.0});
  expect_values(ops::clamp_min(x, 0.0), {0.0, 0.0, 0.0, 1.0, 2.0});
  expect_values(grads_of(ops::clamp_min(x, 0.0), w, {x})[0], {0.0, 0.0, 0.0, 4.0, 5.0});
  expect_values(ops::clamp_max(x, 0.0), {-2.0, -1.0, 0.0, 0.0, 0.0});
  expect_values(grads_of(ops::clamp_max(x, 0.0), w, {x})[0], {1.0, 2.0, 0.0, 0.0, 0.0});
}

// PyTorch 2.15 passes no gradient at the bounds themselves: clamp_min's where(self > min, grad,
// 0), clamp_max's where(self < max, ...), clamp_backward likewise ("clamp_bounds").
TEST(SelectionOps, ClampBoundsPassNoGradient) {
  Tensor x = leaf({-1.0, 0.0, 1.0}, {3});
  expect_values(grad({ops::sum(ops::clamp(x, -1, 1))}, {x})[0], {0.0, 1.0, 0.0});
  expect_values(grad({ops::sum(ops::clamp_min(x, -1))}, {x})[0], {0.0, 1.0, 1.0});
  expect_values(grad({ops::sum(ops::clamp_max(x, 1))}, {x})[0], {1.0, 1.0, 0.0});
}

TEST(SelectionOps, MaximumSplitsTiesAndBroadcasts) {  // "maximum"
  Tensor a = leaf({1.0, 2.0, 3.0, 0.0, 5.0, -1.0}, {2, 3});
  Tensor b = leaf({1.0, 4.0, -1.0}, {3});
  const Tensor y = ops::maximum(a, b);
  expect_values(y, {1.0, 4.0, 3.0, 1.0, 5.0, -1.0});
  const TensorList g = grads_of(y, values(kW6, {2, 3}), {a, b});
  expect_values(g[0], {0.25, 0.0, 2.0, 0.0, -0.25, 1.5});
  expect_values(g[1], {1.75, -1.0, 1.5});
}

TEST(SelectionOps, MinimumSplitsTiesAndBroadcasts) {  // "minimum"
  Tensor a = leaf({1.0, 2.0, 3.0, 0.0, 5.0, -1.0}, {2, 3});
  Tensor b = leaf({1.0, 4.0, -1.0}, {3});
  const Tensor y = ops::minimum(a, b);
  expect_values(y, {1.0, 2.0, -1.0, 0.0, 4.0, -1.0});
  const TensorList g = grads_of(y, values(kW6, {2, 3}), {a, b});
  expect_values(g[0], {0.25, -1.0, 0.0, 1.5, 0.0, 1.5});
  expect_values(g[1], {0.25, -0.25, 3.5});
}

TEST(SelectionOps, MaximumOfNaNGivesBothOperandsTheGradient) {  // "maximum_nan"
  Tensor a = leaf({kNaN, 1.0}, {2});
  Tensor b = leaf({1.0, kNaN}, {2});
  const Tensor y = ops::maximum(a, b);
  expect_exactly(y, {kNaN, kNaN});
  const TensorList g = grad({ops::sum(y)}, {a, b});
  expect_values(g[0], {1.0, 1.0});
  expect_values(g[1], {1.0, 1.0});
}

TEST(SelectionOps, MaximumDoubleBackwardHalvesTies) {  // "maximum_double"
  Tensor a = leaf({1.0, 2.0, 3.0}, {3});
  Tensor b = leaf({3.0, 2.0, 1.0}, {3});
  Tensor v = leaf({1.0, 2.0, 3.0}, {3});
  const Tensor ga = grad({ops::maximum(a, b)}, {a}, GradArgs().grad_outputs({v}).create_graph())[0];
  expect_values(ga, {0.0, 1.0, 3.0});
  expect_values(grad({ops::sum(ops::mul(ga, values({4, 5, 6}, {3})))}, {v})[0], {0.0, 2.5, 6.0});
}

TEST(SelectionOps, WhereBroadcastsAllThree) {  // "where"
  const Tensor cond = values({1, 0}, {2, 1});
  Tensor s = leaf({1.0, 2.0, 3.0}, {3});
  Tensor o = leaf({4.0, 5.0, 6.0, 7.0, 8.0, 9.0}, {2, 3});
  const Tensor y = ops::where(cond, s, o);
  expect_values(y, {1.0, 2.0, 3.0, 7.0, 8.0, 9.0});
  const TensorList g = grads_of(y, values(kW6, {2, 3}), {s, o});
  expect_values(g[0], {0.5, -1.0, 2.0});
  expect_values(g[1], {0.0, 0.0, 0.0, 1.5, -0.25, 3.0});
}

TEST(SelectionOps, MaskedFillBroadcastsTheMask) {  // "masked_fill"
  Tensor s = leaf({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 3});
  const Tensor y = ops::masked_fill(s, values({1, 0, 1}, {3}), -7.5);
  expect_values(y, {-7.5, 2.0, -7.5, -7.5, 5.0, -7.5});
  expect_values(grads_of(y, values(kW6, {2, 3}), {s})[0], {0.0, -1.0, 0.0, 0.0, -0.25, 0.0});
}

// The values, the gradient of sum(softmax(x) * w), and the gradient of sum(g * g) through it.
void expect_softmax(int64_t dim, const std::vector<double>& y, const std::vector<double>& g,
                    const std::vector<double>& gg) {
  Tensor x = leaf({0.5, -1.0, 2.0, 0.25, 1.0, -0.5}, {2, 3});
  const Tensor out = ops::softmax(x, dim);
  expect_values(out, y);
  const Tensor grad_x = grads_of(out, values(kW6, {2, 3}), {x}, true)[0];
  expect_values(grad_x, g);
  expect_values(grad({ops::sum(ops::mul(grad_x, grad_x))}, {x})[0], gg);
}

TEST(SelectionOps, Softmax) {  // "softmax_dim0", "softmax_dim1"
  expect_softmax(0,
                 {0.5621765008857981, 0.11920292202211755, 0.9241418199787566, 0.4378234991142019,
                  0.8807970779778823, 0.07585818002124356},
                 {-0.2461340827375983, -0.0787451890526299, -0.07010371654510848,
                  0.24613408273759838, 0.07874518905262984, 0.07010371654510814},
                 {-0.030134207590305728, 0.018889986788363664, -0.016675665230637418,
                  0.03013420759030574, -0.018889986788363657, 0.016675665230637356});
  expect_softmax(-1,
                 {0.1752903921400367, 0.039112573270687456, 0.7855970345892759, 0.27860068919627295,
                  0.5897976636568125, 0.13160164714691433},
                 {-0.19627733092646912, -0.1024642521891606, 0.29874158311562976,
                  0.23256009787525173, -0.5398161803340688, 0.30725608245881714},
                 {0.10562427087340287, 0.05040445548220015, -0.156028726355603, -0.0377971014819893,
                  -0.16622112838919742, 0.20401822987118698});
}

using SoftmaxLike = Tensor (*)(const Tensor&, int64_t);

// op's gradient is one op, `gradient_op` (Note [softmax's gradient is one op], ops/scan.cc;
// log_softmax_backward in ops/loss.cc, PyTorch's _log_softmax_backward_data): the gradient of it
// wrt op's result reads only its inputs, so after that grad() freed the first gradient's nodes, a
// backward through it still runs, into x. `expected`: g, gy and x.grad.
void expect_gradient_of_gradient(SoftmaxLike op, const char* gradient_op,
                                 const std::vector<std::vector<double>>& expected) {
  Tensor x = leaf({0.5, -1.0, 2.0}, {3});
  const Tensor y = op(x, 0);
  const Tensor w = values({1.0, -2.0, 3.0}, {3});
  const Tensor g =
      grad({y}, {x}, GradArgs().grad_outputs({y}).retain_graph(true).create_graph())[0];
  EXPECT_EQ(g.grad_fn()->name(), gradient_op);
  expect_values(g, expected[0]);
  const Tensor gy =
      grad({g}, {y}, GradArgs().grad_outputs({w}).retain_graph(false).create_graph())[0];
  expect_values(gy, expected[1]);
  backward({gy}, BackwardArgs().grad_tensors({w}));
  expect_values(x.grad(), expected[2]);
}

// The Hessian of sum(op(x, 0) * w) by forward-over-reverse, a column per tangent: the tangent of
// op's gradient, its gradient op's jvp rule. `h`: PyTorch's, row-major.
void expect_hessian_by_forward_over_reverse(SoftmaxLike op, const std::vector<double>& h) {
  const Tensor w = values({1.0, -2.0, 3.0}, {3});
  Tensor x = leaf({0.5, -1.0, 2.0}, {3});
  for (size_t j = 0; j < 3; ++j) {
    DualLevel level;
    std::vector<double> e(3, 0.0);
    e[j] = 1.0;
    const Tensor xd = make_dual(x, values(e, {3}));
    const Tensor g = grad({ops::sum(ops::mul(op(xd, 0), w))}, {x})[0];
    expect_values(unpack_dual(g).tangent, {h[j], h[3 + j], h[6 + j]});
  }
}

TEST(SelectionOps, SoftmaxGradientOfGradient) {  // "softmax_gradient_of_gradient"
  expect_gradient_of_gradient(ops::softmax, "softmax_backward",
                              {{-0.08311022741021316, -0.02387066327038312, 0.10698089068059637},
                               {-1.1591133149113946, 0.9504348658364264, -1.0901599823648844},
                               {2.58406042460459, 2.112112308837783, -4.696172733442374}});
}

TEST(SelectionOps, SoftmaxHessian) {  // "softmax_hessian"
  expect_hessian_by_forward_over_reverse(
      ops::softmax, {-0.16550257107699887, 0.040503622718937496, 0.12499894835806136,
                     0.0405036227189375, -0.16057482281428054, 0.12007120009534306,
                     0.12499894835806141, 0.12007120009534306, -0.24507014845340436});
}

TEST(SelectionOps, LogSoftmaxGradientOfGradient) {  // "log_softmax_gradient_of_gradient"
  expect_gradient_of_gradient(ops::log_softmax, "log_softmax_backward",
                              {{-0.8256058765704306, -3.0369897996244206, 3.8625956761948514},
                               {-0.5381509292797627, -4.8624993434319626, 12.857864569189534},
                               {-8.862311988617968, -6.880288277627772, 15.742600266245741}});
}

TEST(SelectionOps, LogSoftmaxHessian) {  // "log_softmax_hessian"
  expect_hessian_by_forward_over_reverse(
      ops::log_softmax, {-0.2891273411268577, 0.013712116612449442, 0.27541522451440825,
                         0.013712116612449442, -0.07516555976566511, 0.06145344315321567,
                         0.27541522451440825, 0.06145344315321568, -0.3368686676676239});
}

TEST(SelectionOps, Cumsum) {  // "cumsum_dim0", "cumsum_dim1", "cumsum_double"
  const std::vector<double> xs = {0.5, -1.0, 2.0, 0.25, 1.0, -0.5};
  Tensor x = leaf(xs, {2, 3});
  expect_values(ops::cumsum(x, 0), {0.5, -1.0, 2.0, 0.75, 0.0, 1.5});
  expect_values(grads_of(ops::cumsum(x, 0), values(kW6, {2, 3}), {x})[0],
                {2.0, -1.25, 5.0, 1.5, -0.25, 3.0});
  expect_values(ops::cumsum(x, -1), {0.5, -0.5, 1.5, 0.25, 1.25, 0.75});
  expect_values(grads_of(ops::cumsum(x, 1), values(kW6, {2, 3}), {x})[0],
                {1.5, 1.0, 2.0, 4.25, 2.75, 3.0});
  Tensor v = leaf({1.0, 2.0, 3.0}, {3});
  Tensor z = leaf({1.0, 2.0, 3.0}, {3});
  const Tensor g = grad({ops::cumsum(z, 0)}, {z}, GradArgs().grad_outputs({v}).create_graph())[0];
  expect_values(g, {6.0, 5.0, 3.0});
  expect_values(grad({ops::sum(ops::mul(g, values({1, 10, 100}, {3})))}, {v})[0],
                {1.0, 11.0, 111.0});
}

// Bad input: the error names the op and the shapes or the dim, and the graph stays usable.
TEST(SelectionOps, Errors) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor y = ops::mul(x, 2.0);
  const std::string softmax_dim = error_of([&] { ops::softmax(y, 2); });
  EXPECT_NE(softmax_dim.find("softmax: dim 2 is out of range"), std::string::npos) << softmax_dim;
  const std::string cumsum_dim = error_of([&] { ops::cumsum(y, -3); });
  EXPECT_NE(cumsum_dim.find("cumsum: dim -3 is out of range"), std::string::npos) << cumsum_dim;
  const std::string maximum = error_of([&] { ops::maximum(y, values({1, 2}, {2})); });
  EXPECT_NE(maximum.find("maximum: shapes [2, 3] and [2] cannot be broadcast"), std::string::npos)
      << maximum;
  const std::string where = error_of([&] {
    ops::where(values({1, 0}, {2}), values({1, 2, 3}, {3}), y);
  });
  EXPECT_NE(where.find("where: condition [2], self [3] and other [2, 3] cannot be broadcast"),
            std::string::npos)
      << where;
  const std::string fill = error_of([&] { ops::masked_fill(y, values({1, 0}, {2}), 1.0); });
  EXPECT_NE(fill.find("masked_fill: shapes [2, 3] and [2] cannot be broadcast"), std::string::npos)
      << fill;
  const std::string dtype = error_of([&] { ops::where(ops::gt(x, y), x, ops::ones({2, 3})); });
  EXPECT_NE(dtype.find("where"), std::string::npos) << dtype;
  // Nothing recorded by the failed calls: the graph runs as before.
  expect_values(grad({ops::sum(y)}, {x})[0], std::vector<double>(6, 2.0));
}

// Note [Masks are 0 and 1]: where and masked_fill keep a copy of the mask, as PyTorch's
// `torch.where(m != 0, a, b)` keeps the bool tensor `m != 0`: writing the caller's mask
// afterwards fails no version check, and the gradient is the one of the mask as it was read
// (found by the conformance programs against PyTorch: seed 11, programs 82 and 1401).
TEST(SelectionOps, AWriteToTheMaskAfterwardsChangesNothing) {
  Tensor a = leaf({1.0, 2.0, 3.0}, {3});
  Tensor mask = values({1, 0, 1}, {3});
  const Tensor y = ops::where(mask, a, values({0, 0, 0}, {3}));
  const Tensor z = ops::masked_fill(a, mask, 5.0);
  ops::mul_(mask, values({0, 0, 0}, {3}));
  expect_values(grad({ops::sum(y)}, {a})[0], {1.0, 0.0, 1.0});
  expect_values(grad({ops::sum(z)}, {a})[0], {0.0, 1.0, 0.0});
}

// The comparisons make masks of 0 and 1 without history (Note [Masks are 0 and 1]).
TEST(SelectionOps, ComparisonsAreMasksWithoutHistory) {
  Tensor a = leaf({1.0, 2.0, kNaN}, {3});
  const Tensor b = values({2.0, 2.0, 2.0}, {3});
  expect_values(ops::eq(a, b), {0, 1, 0});
  expect_values(ops::gt(a, b), {0, 0, 0});
  expect_values(ops::ge(a, b), {0, 1, 0});
  EXPECT_FALSE(ops::gt(a, b).requires_grad());
  expect_values(ops::sign(values({-3, 0, 2}, {3})), {-1, 0, 1});
}

}  // namespace
}  // namespace ag
