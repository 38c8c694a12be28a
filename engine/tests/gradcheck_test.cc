#include "engine/gradcheck.h"

#include <gtest/gtest.h>

#include "engine/call.h"
#include "engine/error.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::leaf;

TEST(Gradcheck, PassesOnCorrectGradients) {
  Tensor a = leaf({0.3, -1.2, 2.0}, {3});
  Tensor b = leaf({1.5, 0.7, -0.4}, {3});
  auto f = [](const TensorList& x) { return ops::add(ops::mul(x[0], x[1]), ops::neg(x[0])); };
  GradcheckResult r = gradcheck(f, {a, b});
  EXPECT_TRUE(r.passed) << r.report;
  EXPECT_LT(r.max_abs_error, 1e-8);
  GradcheckResult rr = gradgradcheck(f, {a, b});
  EXPECT_TRUE(rr.passed) << rr.report;
}

// x^2 whose backward claims the derivative is x (wrong by a factor of 2).
class WrongSquare final : public Node {
 public:
  WrongSquare(const Tensor& x) : Node({gradient_edge(x)}), x_(x) {
    add_input_metadata(TensorMeta::of(x));
  }
  TensorList apply(TensorList&& grads, const Call&) override { return {ops::mul(grads[0], x_)}; }
  std::string name() const override { return "WrongSquare"; }

 private:
  Tensor x_;
};

Tensor wrong_square(const Tensor& x) {
  Tensor out = ops::mul(x.detach(), x.detach());
  out.impl()->requires_grad = true;
  out.impl()->grad_fn = std::make_shared<WrongSquare>(x);
  return out;
}

TEST(Gradcheck, FailsOnAWrongFormulaAndSaysWhere) {
  Tensor x = leaf({0.5, 2.0}, {2});
  GradcheckResult r = gradcheck([](const TensorList& in) { return wrong_square(in[0]); }, {x});
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.report.find("input 0"), std::string::npos) << r.report;
  EXPECT_NEAR(r.max_abs_error, 2.0, 1e-6);  // at x = 2: analytical 2 vs numerical 4
}

TEST(Gradgradcheck, FailsWhenTheFirstDerivativeIsNotDifferentiableCorrectly) {
  // d/dx of the (wrong) gradient x*g is g, but the true second derivative of x^2 is 2g.
  Tensor x = leaf({0.5, 2.0}, {2});
  auto f = [](const TensorList& in) { return ops::mul(wrong_square(in[0]), in[0]); };
  EXPECT_FALSE(gradgradcheck(f, {x}).passed);
}

// y = X @ A for a 2x2 X and a fixed, non-symmetric A, whose backward returns the true gradient
// G A^T changed by `mutate`: the errors an oracle must see even though magnitudes or sums agree.
using Mutation = std::vector<double> (*)(std::vector<double>);

class MutatedProduct final : public Node {
 public:
  MutatedProduct(const Tensor& x, const Tensor& a, Mutation mutate)
      : Node({gradient_edge(x)}), a_(a), mutate_(mutate) {
    add_input_metadata(TensorMeta::of(x));
  }
  TensorList apply(TensorList&& grads, const Call&) override {
    const Tensor right = ops::mm(grads[0], ops::transpose(a_, 0, 1));
    return {ops::from_vector(mutate_(right.to_vector()), right.shape(), right.dtype())};
  }
  std::string name() const override { return "MutatedProduct"; }

 private:
  Tensor a_;
  Mutation mutate_;
};

GradcheckResult check_mutated(Mutation mutate) {
  const Tensor a = ops::from_vector({1.0, 2.0, -0.5, 3.0}, {2, 2}, DType::kFloat64);
  Tensor x = leaf({0.3, -1.2, 2.0, 0.7}, {2, 2});
  return gradcheck(
      [&](const TensorList& in) {
        Tensor out = ops::mm(in[0].detach(), a);
        out.impl()->requires_grad = true;
        out.impl()->grad_fn = std::make_shared<MutatedProduct>(in[0], a, mutate);
        return out;
      },
      {x});
}

TEST(Gradcheck, PassesTheUnmutatedProduct) {
  GradcheckResult r = check_mutated([](std::vector<double> g) { return g; });
  EXPECT_TRUE(r.passed) << r.report;
}

TEST(Gradcheck, FailsOnASignError) {
  EXPECT_FALSE(check_mutated([](std::vector<double> g) {
                 for (double& v : g) v = -v;
                 return g;
               }).passed);
}

TEST(Gradcheck, FailsOnTwoSwappedElements) {
  EXPECT_FALSE(check_mutated([](std::vector<double> g) {
                 std::swap(g[0], g[1]);
                 return g;
               }).passed);
}

TEST(Gradcheck, FailsOnATransposedGradient) {
  EXPECT_FALSE(check_mutated([](std::vector<double> g) {
                 std::swap(g[1], g[2]);  // [2, 2] row-major: the transpose swaps (0,1), (1,0)
                 return g;
               }).passed);
}

TEST(Gradcheck, FailsOnAGradientOffInOneElement) {
  GradcheckResult r = check_mutated([](std::vector<double> g) {
    g[3] += 1e-3;
    return g;
  });
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.report.find("input 0[3]"), std::string::npos) << r.report;
}

TEST(Gradcheck, RejectsFloat32Inputs) {
  Tensor x = leaf({1}, {1}, true, DType::kFloat32);
  EXPECT_THROW(gradcheck([](const TensorList& in) { return in[0]; }, {x}), Error);
}

}  // namespace
}  // namespace ag
