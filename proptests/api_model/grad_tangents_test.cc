// Forward over reverse in the API model (Note [Tangents of gradients], program.h): the tangents
// the model predicts for gradients computed inside a dual level, against the values PyTorch 2.15
// printed for the same programs (fwAD.unpack_dual(g).tangent).
#include <gtest/gtest.h>

#include "proptests/api_model/model.h"

namespace ag::proptests {
namespace {

// A small driver: names are handed out in order.
struct Program {
  Model m{Semantics::pytorch()};
  int next = 0;
  int leaf(std::vector<double> v, bool rg) {
    const Dims shape{static_cast<int64_t>(v.size())};
    EXPECT_EQ(m.leaf(next, shape, v, rg).expect, Expect::kOk);
    return next++;
  }
  int dual(int of, std::vector<double> t) {
    EXPECT_EQ(m.make_dual(next, of, m.shape(of), t).expect, Expect::kOk);
    return next++;
  }
  int op(OpKind kind, std::vector<int> operands, double scalar = 0) {
    OpAttrs a;
    a.scalar = scalar;
    EXPECT_EQ(m.op(next, kind, a, operands).expect, Expect::kOk);
    return next++;
  }
  int grad(int root, int input, int go = -1) {
    CallArgs args;
    args.roots = {root};
    args.inputs = {input};
    if (go >= 0) args.grad_tensors = {go};
    EXPECT_EQ(m.grad(args, {next}).expect, Expect::kOk);
    m.end_call();
    return next++;
  }
  void backward(int root, bool create_graph) {
    CallArgs args;
    args.roots = {root};
    args.create_graph = create_graph;
    EXPECT_EQ(m.backward(args).expect, Expect::kOk);
    m.end_call();
  }
  const ImplState& of(int name) const { return m.impl(m.impl_of(name)); }
};

void expect_tangent(const ImplState& t, const std::vector<double>& want) {
  ASSERT_EQ(t.tangent_kind, Tangent::kKnown);
  ASSERT_EQ(t.tangent.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(t.tangent[k], want[k], 1e-12) << k;
}

// Each formula reads its saved values' own tangents: exp's saved result carries x's, and the
// make_dual of an intermediate tensor has one unrelated to its producer's (zero there).
TEST(GradTangents, SavedValuesKeepTheirOwnTangents) {
  Program p;
  const int x = p.leaf({0.25, -0.75}, true);
  ASSERT_EQ(p.m.enter_dual_level().expect, Expect::kOk);
  const int xd = p.dual(x, {1.0, 2.0});
  const int z = p.op(OpKind::kMulScalar, {p.op(OpKind::kExp, {xd})}, 3.0);
  const int z2 = p.op(OpKind::kMulScalar, {p.op(OpKind::kExp, {x})}, 3.0);
  const int m = p.dual(z2, {0.5, -1.0});
  const int w = p.op(OpKind::kSum, {p.op(OpKind::kMul, {p.op(OpKind::kMul, {m, m}), z})});
  const int g = p.grad(w, x);
  expect_tangent(p.of(g), {201.1539842182289, 9.041988613678544});
}

// A dual grad_output: tanh's formula is linear in it.
TEST(GradTangents, DualGradOutputs) {
  Program p;
  const int x = p.leaf({0.25, -0.75}, true);
  ASSERT_EQ(p.m.enter_dual_level().expect, Expect::kOk);
  const int go = p.dual(p.leaf({1.0, 2.0}, false), {3.0, 4.0});
  const int g = p.grad(p.op(OpKind::kTanh, {x}), x, go);
  expect_tangent(p.of(g), {2.820044546419134, 2.386343233125326});
}

// Defined or None as PyTorch's formulas make it: add reads nothing (None); relu reads its dual
// result (zeros, but a tensor); pow(x, 0)'s formula is a constant (None).
TEST(GradTangents, DefinedExactlyWhereAFormulaReadsADualValue) {
  Program p;
  const int x = p.leaf({0.25, -0.75}, true);
  ASSERT_EQ(p.m.enter_dual_level().expect, Expect::kOk);
  const int c = p.dual(p.leaf({1.0, 2.0}, false), {3.0, 4.0});
  const int added = p.grad(p.op(OpKind::kSum, {p.op(OpKind::kAdd, {x, c})}), x);
  EXPECT_EQ(p.of(added).tangent_kind, Tangent::kNone);
  const int relu = p.op(OpKind::kRelu, {p.op(OpKind::kAdd, {x, c})});
  expect_tangent(p.of(p.grad(p.op(OpKind::kSum, {relu}), x)), {0.0, 0.0});
  const int pow0 = p.op(OpKind::kPowScalar, {x}, 0.0);
  const int g = p.grad(p.op(OpKind::kSum, {p.op(OpKind::kMul, {pow0, c})}), x);
  EXPECT_EQ(p.of(g).tangent_kind, Tangent::kNone);
}

// backward(create_graph=True): the first .grad is a clone (the gradient's tangent), the next an
// out-of-place sum (old + new).
TEST(GradTangents, GradFieldsUnderCreateGraph) {
  Program p;
  const int x = p.leaf({0.5, -1.5}, true);
  ASSERT_EQ(p.m.enter_dual_level().expect, Expect::kOk);
  const int xd = p.dual(x, {1.0, 2.0});
  p.backward(p.op(OpKind::kSum, {p.op(OpKind::kMul, {xd, xd})}), true);
  expect_tangent(p.m.impl(p.of(x).grad), {2.0, 4.0});
  p.backward(p.op(OpKind::kSum, {p.op(OpKind::kMul, {xd, xd})}), true);
  expect_tangent(p.m.impl(p.of(x).grad), {4.0, 8.0});
}

// A later level sees none of an earlier level's tangents, saved ones included.
TEST(GradTangents, AnEarlierLevelsTangentsAreGone) {
  Program p;
  const int x = p.leaf({0.5, -1.5}, true);
  ASSERT_EQ(p.m.enter_dual_level().expect, Expect::kOk);
  const int xd = p.dual(x, {1.0, 2.0});
  const int s = p.op(OpKind::kSum, {p.op(OpKind::kMul, {xd, xd})});
  ASSERT_EQ(p.m.exit_dual_level().expect, Expect::kOk);
  ASSERT_EQ(p.m.enter_dual_level().expect, Expect::kOk);
  EXPECT_EQ(p.of(p.grad(s, x)).tangent_kind, Tangent::kNone);
}

}  // namespace
}  // namespace ag::proptests
