// Function transforms (Note [Transforms], engine/functional.h), pinned to torch.func in PyTorch
// 2.15 (the script is in the comment above each test) and checked against each other.

#include "engine/functional.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/autograd.h"
#include "engine/tests/test_util.h"
#include "ops/batched_jvp.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace ag::func {
namespace {

Tensor vec(std::vector<double> v) {
  const auto n = static_cast<int64_t>(v.size());
  return ops::from_vector(v, {n}, DType::kFloat64);
}

void expect_near(const Tensor& t, const std::vector<double>& expected, double tol = 1e-12) {
  const std::vector<double> got = t.to_vector();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "at " << i;
}

// W = [[.5, -1, .25], [1.5, .75, -.5]]; x = [.3, -.7, 1.1]; f = lambda x: tanh(W @ x) * x[:2]
const Function kTanhProduct = [](const TensorList& in) -> TensorList {
  const Tensor w = ops::from_vector({.5, -1, .25, 1.5, .75, -.5}, {2, 3}, DType::kFloat64);
  return {ops::mul(ops::tanh(ops::matmul(w, in[0])), ops::slice(in[0], 0, 0, 2))};
};
// torch.func.jacfwd(f)(x)
const std::vector<double> kTanhProductJacobian = {0.8610558368673188,   -0.10350953333107558,
                                                  0.025877383332768896, -0.7270401053684874,
                                                  -0.918119775033626,   0.24234670178949583};

TEST(Transforms, JacfwdAndJacrevGiveTorchFuncsJacobian) {
  const Tensor x = vec({.3, -.7, 1.1});
  const Tensor fwd = jacfwd(kTanhProduct, {x})[0][0];
  const Tensor rev = jacrev(kTanhProduct, {x})[0][0];
  EXPECT_EQ(fwd.shape(), (Shape{2, 3}));
  EXPECT_EQ(rev.shape(), (Shape{2, 3}));
  expect_near(fwd, kTanhProductJacobian);
  expect_near(rev, kTanhProductJacobian);
  EXPECT_FALSE(x.requires_grad());  // the transforms leave their inputs as they were
}

// x requires grad; J = torch.func.jacrev(f)(x); torch.autograd.grad((J * J).sum(), x): the
// batched cotangents' Jacobian (Note [Batched cotangents]) is differentiable in the primal.
TEST(Transforms, JacrevIsDifferentiableInAPrimalThatRequiresGrad) {
  Tensor x = vec({.3, -.7, 1.1});
  x.set_requires_grad(true);
  for (const auto& transform : {jacrev, jacrev_by_rows}) {
    const Tensor j = transform(kTanhProduct, {x})[0][0];
    ASSERT_TRUE(j.requires_grad());
    expect_near(j, kTanhProductJacobian);
    expect_near(ag::grad({ops::sum(ops::mul(j, j))}, {x})[0],
                {1.737312548648938, -2.465813059941645, -0.28266390977322386});
  }
}

// Note [Batched cotangents]: an output without elements takes no row of the batch (beside one
// that has some), and with no output element at all jacrev builds the shapes one row at a time.
// torch.func.jacrev(lambda x: (x[0:0], x * x))(x): shapes [0, 3] and [3, 3], diag(2 x).
TEST(Transforms, JacrevOfAnOutputWithoutElementsIsEmpty) {
  const Tensor x = vec({.3, -.7, 1.1});
  const Function both = [](const TensorList& in) -> TensorList {
    return {ops::slice(in[0], 0, 0, 0), ops::mul(in[0], in[0])};
  };
  const Function empty = [](const TensorList& in) -> TensorList {
    return {ops::slice(in[0], 0, 0, 0)};
  };
  const std::vector<TensorList> j = jacrev(both, {x});
  EXPECT_EQ(j[0][0].shape(), (Shape{0, 3}));
  EXPECT_EQ(j[1][0].shape(), (Shape{3, 3}));
  expect_near(j[1][0], {.6, 0, 0, 0, -1.4, 0, 0, 0, 2.2});
  EXPECT_EQ(jacrev(empty, {x})[0][0].shape(), (Shape{0, 3}));
}

// out, fn = torch.func.vjp(f, x) with x not requiring grad: out.requires_grad is False, out.is_leaf
// (found by the conformance corpus: the engine's output kept the vjp's own history)
TEST(Transforms, VjpOutputsCarryNoHistoryOfTheirOwn) {
  const Tensor x = vec({.3, -.7, 1.1});
  const VjpResult v = vjp(kTanhProduct, {x});
  EXPECT_FALSE(v.outputs[0].requires_grad());
  EXPECT_TRUE(v.outputs[0].is_leaf());
  expect_near(v.vjp({vec({1, 0})})[0],
              {kTanhProductJacobian[0], kTanhProductJacobian[1], kTanhProductJacobian[2]});
}

TEST(Transforms, JvpAndVjpAreTheJacobianTimesAVector) {
  const Tensor x = vec({.3, -.7, 1.1}), u = vec({1, -2, .5}), w = vec({.25, 3});
  const JvpResult j = jvp(kTanhProduct, {x}, {u});
  const VjpResult v = vjp(kTanhProduct, {x});
  const std::vector<double>& J = kTanhProductJacobian;
  std::vector<double> ju(2, 0.0), wj(3, 0.0);
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 3; ++c) {
      ju[r] += J[r * 3 + c] * u.to_vector()[c];
      wj[c] += w.to_vector()[r] * J[r * 3 + c];
    }
  }
  expect_near(j.tangents[0], ju);
  expect_near(v.vjp({w})[0], wj);
  expect_near(j.outputs[0], v.outputs[0].to_vector());
}

// g = lambda x: (sin(x) * x).sum() + x[0] * x[1] * x[2]; torch.func.hessian(g)(x) and
// torch.func.jvp(torch.func.grad(g), (x,), (v,)) with v = [1, 2, -1]
const Function kCubic = [](const TensorList& in) -> TensorList {
  const Tensor& x = in[0];
  const Tensor prod =
      ops::mul(ops::mul(ops::select(x, 0, 0), ops::select(x, 0, 1)), ops::select(x, 0, 2));
  return {ops::add(ops::sum(ops::mul(ops::sin(x), x)), prod)};
};

TEST(Transforms, HessianAndHvpByForwardOverReverseGiveTorchFuncs) {
  const Tensor x = vec({.3, -.7, 1.1});
  const Tensor h = hessian(kCubic, x);
  EXPECT_EQ(h.shape(), (Shape{3, 3}));
  expect_near(h, {1.8220169162528101, 1.1, -0.7, 1.1, 1.0787319935025934, 0.3, -0.7, 0.3,
                  -0.07313585321642452});
  expect_near(hvp(kCubic, x, vec({1, 2, -1})),
              {4.7220169162528105, 2.9574639870051866, -0.026864146783575515});
}

// A transform of a transform: the jacobian of the gradient (jacfwd over vjp) is the hessian.
TEST(Transforms, TransformsCompose) {
  const Tensor x = vec({.3, -.7, 1.1});
  const Function gradient = [](const TensorList& in) {
    const VjpResult r = vjp(kCubic, in);
    return r.vjp({ops::ones_like(r.outputs[0])});
  };
  expect_near(jacfwd(gradient, {x})[0][0], hessian(kCubic, x).to_vector());
  expect_near(jacrev(gradient, {x})[0][0], hessian(kCubic, x).to_vector());
}

// Note [Batched tangents]: a two-input function with broadcasting, views and a reduction.
// def f(a, z): m = z @ a; return (exp(m) * a[1]).sum(0), tanh(z + a[0])
const Function kTwoInputs = [](const TensorList& in) -> TensorList {
  const Tensor m = ops::matmul(in[1], in[0]);  // [3, 2] @ [2, 2]
  return {ops::sum(ops::mul(ops::exp(m), ops::select(in[0], 0, 1)), 0),
          ops::tanh(ops::add(in[1], ops::select(in[0], 0, 0)))};
};

// y = [[.5, 1, -.25], [2, .1, -1.5]] (float64); a = y[:, 0:2] (a view);
// z = [[.2, .4], [-.6, 1.2], [-.3, .9]]
// torch.func.jacfwd(f, argnums=(0, 1))(a, z)[0]: the first output's Jacobians.
TEST(Transforms, BatchedJacfwdGivesTorchFuncsJacobians) {
  const Tensor y = ops::from_vector({.5, 1, -.25, 2, .1, -1.5}, {2, 3}, DType::kFloat64);
  const Tensor z = ops::from_vector({.2, .4, -.6, 1.2, -.3, .9}, {3, 2}, DType::kFloat64);
  const std::vector<TensorList> j = jacfwd(kTwoInputs, {ops::slice(y, 1, 0, 2), z});
  EXPECT_EQ(j[0][0].shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(j[0][1].shape(), (Shape{2, 3, 2}));
  expect_near(j[0][0],
              {-11.939750546926309, 0.0, 46.771806818916104, 0.0, 0.0, -0.036019547881045964, 0.0,
               2.8986733432646425},
              1e-10);
  expect_near(
      j[0][1],
      {2.45960311115695, 9.8384124446278, 8.16616991256765, 32.6646796502706, 5.2069798271798495,
       20.827919308719398, 0.1271249150321405, 0.01271249150321405, 0.061878339180614084,
       0.006187833918061408, 0.08105842459701872, 0.008105842459701872},
      1e-10);
}

// jacfwd's, jacrev's and hessian's one batched level gives the values one column or row at a
// time gives.
TEST(Transforms, BatchedJacfwdAndHessianEqualTheColumnByColumnOnes) {
  const Tensor y = ops::from_vector({.5, 1, -.25, 2, .1, -1.5}, {2, 3}, DType::kFloat64);
  const Tensor z = ops::from_vector({.2, .4, -.6, 1.2, -.3, .9}, {3, 2}, DType::kFloat64);
  const Function f = [](const TensorList& in) -> TensorList {
    return {ops::transpose(in[0], 0, 1), ops::sum(ops::tanh(in[0]), 1)};
  };
  for (const auto& [fn, primals] : {std::pair{kTwoInputs, TensorList{ops::slice(y, 1, 0, 2), z}},
                                    std::pair{f, TensorList{z}}}) {
    const std::vector<TensorList> batched = jacfwd(fn, primals);
    const std::vector<TensorList> columns = jacfwd_by_columns(fn, primals);
    const std::vector<TensorList> rows = jacrev_by_rows(fn, primals);
    const std::vector<TensorList> batched_rows = jacrev(fn, primals);
    ASSERT_EQ(batched.size(), columns.size());
    for (size_t o = 0; o < batched.size(); ++o) {
      for (size_t i = 0; i < primals.size(); ++i) {
        EXPECT_EQ(batched[o][i].shape(), columns[o][i].shape());
        EXPECT_EQ(batched_rows[o][i].shape(), rows[o][i].shape());
        expect_near(batched[o][i], columns[o][i].to_vector());
        expect_near(batched[o][i], rows[o][i].to_vector());
        expect_near(batched_rows[o][i], rows[o][i].to_vector());
      }
    }
  }
  expect_near(hessian(kCubic, vec({.3, -.7, 1.1})),
              hessian_by_columns(kCubic, vec({.3, -.7, 1.1})).to_vector());
}

// An op of this test's own with a jvp rule and no batching rule (every op of the op list has one):
// twice its input.
const ops::Input kTwiceSelf{0, "self"};
const ops::OpSpec kTwice{
    "twice_without_batching_rule",
    {{kTwiceSelf, {}, [](const ops::Ctx& c) { return ops::mul(c.grad(), 2.0); }}}};
const ops::DeclareJvp twice_jvp{
    kTwice, [](const ops::JvpContext& c) { return ops::mul(c.tangent(kTwiceSelf), 2.0); }};
Tensor twice_without_batching_rule(const Tensor& x) {
  std::vector<double> values = x.to_vector();
  for (double& v : values) v *= 2;
  return ops::record(kTwice, {&x}, ops::from_vector(values, x.shape(), x.dtype()));
}

// Note [Batching rules]: the small net of the paper's jacfwd rows (linear, tanh) takes a batching
// rule at every op, forward and (for its Hessian) backward; an op with none runs row by row, and
// gives the same Jacobian.
TEST(Transforms, OpsWithoutABatchingRuleRunRowByRow) {
  const Tensor w1 = ops::from_vector({.5, -1, .25, 1.5, .75, -.5}, {3, 2}, DType::kFloat64);
  const Tensor w2 = ops::from_vector({.3, .2, -.4, 1, -1, .6}, {2, 3}, DType::kFloat64);
  const Function net = [&](const TensorList& in) -> TensorList {
    return {ops::tanh(ops::linear(ops::tanh(ops::linear(in[0], w1)), w2))};
  };
  const Tensor x = vec({.3, -.7});
  ops::batched_jvp_fallbacks().clear();
  const Tensor j = jacfwd(net, {x})[0][0];
  expect_near(j, jacrev(net, {x})[0][0].to_vector());
  EXPECT_TRUE(ops::batched_jvp_fallbacks().empty());
  const Function loss = [&](const TensorList& in) -> TensorList { return {ops::sum(net(in)[0])}; };
  expect_near(hessian(loss, x), hessian_by_columns(loss, x).to_vector());
  for (const auto& [op, count] : ops::batched_jvp_fallbacks())
    ADD_FAILURE() << op << " ran by rows";
  // 2 x * x, through an op with no batching rule.
  const Function doubled = [](const TensorList& in) -> TensorList {
    return {twice_without_batching_rule(ops::mul(in[0], in[0]))};
  };
  ops::batched_jvp_fallbacks().clear();
  const Tensor c = jacfwd(doubled, {x})[0][0];
  EXPECT_EQ(ops::batched_jvp_fallbacks()[kTwice.name()], 1);
  expect_near(c, jacfwd_by_columns(doubled, {x})[0][0].to_vector());
  expect_near(c, jacrev(doubled, {x})[0][0].to_vector());
  expect_near(c, {1.2, 0, 0, -2.8});
}

// Note [Batching rules]: as_strided's rule reads each row of a batched tangent from the row's own
// storage (row by row, every row would read row 0's).
TEST(Transforms, AsStridedReadsEachRowOfABatchedTangent) {
  // x * x's elements 1 and 3; jacfwd(lambda x: (x * x).as_strided((2,), (2,), 1))(x).
  const Function strided = [](const TensorList& in) -> TensorList {
    return {ops::as_strided(ops::mul(in[0], in[0]), {2}, {2}, 1)};
  };
  const Tensor x = vec({.3, -.7, 1.1, .45});
  ops::batched_jvp_fallbacks().clear();
  const Tensor c = jacfwd(strided, {x})[0][0];
  EXPECT_TRUE(ops::batched_jvp_fallbacks().empty());
  expect_near(c, jacfwd_by_columns(strided, {x})[0][0].to_vector());
  expect_near(c, {0, -1.4, 0, 0, 0, 0, 0, .9});
  // Of a view at an offset, through its tangent read from its base's.
  const Function of_view = [](const TensorList& in) -> TensorList {
    return {ops::as_strided(ops::slice(ops::mul(in[0], in[0]), 0, 1, 4), {2}, {1}, 2)};
  };
  const Tensor v = jacfwd(of_view, {x})[0][0];
  expect_near(v, jacrev(of_view, {x})[0][0].to_vector());
  expect_near(v, {0, 0, 2.2, 0, 0, 0, 0, .9});
}

// Note [as_strided's tangent]: the tangent of a transposed result is copied at its strides first.
// a = x.reshape(2, 2).t(); jacfwd(lambda x: (a * a).as_strided((3,), (1,), 1))(x), as jacrev.
TEST(Transforms, AsStridedReadsATangentLaidOutAsItsInput) {
  const Function f = [](const TensorList& in) -> TensorList {
    const Tensor a = ops::t(ops::reshape(in[0], {2, 2}));
    return {ops::as_strided(ops::mul(a, a), {3}, {1}, 1)};
  };
  const Tensor x = vec({.3, -.7, 1.1, .45});
  const std::vector<double> expected = {0, -1.4, 0, 0, 0, 0, 2.2, 0, 0, 0, 0, .9};
  expect_near(jacfwd(f, {x})[0][0], expected);
  expect_near(jacfwd_by_columns(f, {x})[0][0], expected);
  expect_near(jacrev(f, {x})[0][0], expected);
}

// Note [Batching rules]: the ops that move gradients between views and their bases (view_scatter,
// view_gather, view_zeroed, copied_gradient: as_strided's gradient, a write through a view's) and
// clone take their batching rules in a Hessian.
TEST(Transforms, GradientsThroughViewsAndWritesTakeBatchingRules) {
  const Tensor x = vec({.3, -.7, 1.1, .45});
  const Tensor w = vec({.6, -1.3, .4, .9});
  const Function strided = [&](const TensorList& in) -> TensorList {
    const Tensor y = ops::tanh(ops::mul(in[0], in[0]));
    const Tensor s = ops::as_strided(y, {2, 2}, {1, 2}, 0);  // overlapping windows of y
    return {ops::sum(ops::mul(ops::tanh(ops::reshape(s, {4})), w))};
  };
  const Function written = [&](const TensorList& in) -> TensorList {
    Tensor y = ops::clone(ops::tanh(in[0]));
    Tensor head = ops::slice(y, 0, 0, 2);
    ops::mul_(head, ops::slice(in[0], 0, 1, 3));  // a write through a view of y
    return {ops::sum(ops::mul(ops::tanh(y), w))};
  };
  const Function reshaped_write = [&](const TensorList& in) -> TensorList {
    Tensor y = ops::clone(ops::tanh(in[0]));
    Tensor all = ops::reshape(y, {2, 2});
    ops::mul_(all, ops::reshape(in[0], {2, 2}));  // a write through a view of all of y
    return {ops::sum(ops::mul(ops::tanh(y), w))};
  };
  for (const Function& f : {strided, written, reshaped_write}) {
    ops::batched_jvp_fallbacks().clear();
    expect_near(hessian(f, x), hessian_by_columns(f, x).to_vector());
    for (const auto& [op, count] : ops::batched_jvp_fallbacks())
      ADD_FAILURE() << op << " ran by rows";
  }
}

// Note [Batching rules]: a small classifier's ops along a dim, selections, gathers and loss take
// their batching rules, forward (jacfwd) and backward (hessian, whose level runs their gradients:
// softmax_backward, log_softmax_backward, scatter_add, nll_loss_backward).
TEST(Transforms, OpsAlongDimsSelectionsGathersAndLossesTakeBatchingRules) {
  const Tensor mask = ops::from_vector({1, 0, 0, 1, 1, 0}, {2, 3}, DType::kFloat64);
  const Function f = [&](const TensorList& in) -> TensorList {
    const Tensor x = ops::reshape(ops::tanh(in[0]), {2, 3});
    const Tensor chosen =
        ops::where(ops::gt(x, ops::mul(mask, .1)), ops::softmax(x, 1), ops::log_softmax(x, 0));
    const Tensor sums = ops::cumsum(ops::masked_fill(ops::mul(chosen, x), mask, .5), 1);
    const Tensor picked = ops::gather(sums, 1, ops::Index{{2, 1}, {2, 0}});
    const Tensor selected = ops::sum(ops::index_select(ops::mul(x, x), 1, {2, 0}), 1);
    Tensor out = ops::add(ops::max(sums, 1).values, ops::reshape(picked, {2}));
    out = ops::add(out, ops::mul(ops::min(x, 1).values, ops::slice(selected, 0, 0, 2)));
    return {ops::add(out, ops::cross_entropy(ops::mul(x, sums), {2, 1}))};
  };
  const Tensor x = vec({.3, -.7, 1.1, .45, -.2, .8});
  ops::batched_jvp_fallbacks().clear();
  expect_near(jacfwd(f, {x})[0][0], jacrev(f, {x})[0][0].to_vector());
  const Function loss = [&](const TensorList& in) -> TensorList {
    return {ops::sum(ops::mul(f(in)[0], vec({.6, -1.3})))};
  };
  expect_near(hessian(loss, x), hessian_by_columns(loss, x).to_vector());
  for (const auto& [op, count] : ops::batched_jvp_fallbacks())
    ADD_FAILURE() << op << " ran by rows";
}

// Note [Batching rules]: diagonal, unfold, select and slice take their batching rules forward,
// and their gradients (diagonal_backward, unfold_backward, select_backward, slice_backward) theirs
// in a Hessian; also unfold's of a 0-dim row (Note [Batched dims], ops/batched_jvp.h).
TEST(Transforms, ViewsAndTheirGradientsTakeBatchingRules) {
  const Function f = [](const TensorList& in) -> TensorList {
    const Tensor x = ops::reshape(ops::mul(in[0], in[0]), {3, 3});
    const Tensor windows = ops::sum(ops::unfold(x, 1, 2, 1), 2);       // [3, 2]
    const Tensor d = ops::tanh(ops::diagonal(ops::tanh(x), 0, 1, 0));  // [3]
    const Tensor s = ops::add(ops::select(windows, 1, 1), ops::slice(in[0], 0, 2, 9, 3));
    const Tensor scalar = ops::unfold(ops::sum(ops::mul(in[0], in[0])), 0, 1, 1);  // [1]
    return {ops::add(ops::mul(d, s), scalar)};
  };
  const Tensor x = vec({.3, -.7, 1.1, .45, -.2, .8, .15, -.9, .6});
  ops::batched_jvp_fallbacks().clear();
  expect_near(jacfwd(f, {x})[0][0], jacrev(f, {x})[0][0].to_vector());
  const Function loss = [&](const TensorList& in) -> TensorList {
    return {ops::sum(ops::mul(f(in)[0], vec({.6, -1.3, .4})))};
  };
  expect_near(hessian(loss, x), hessian_by_columns(loss, x).to_vector());
  for (const auto& [op, count] : ops::batched_jvp_fallbacks())
    ADD_FAILURE() << op << " ran by rows";
}

}  // namespace
}  // namespace ag::func
