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

TEST(Gradcheck, RejectsFloat32Inputs) {
  Tensor x = leaf({1}, {1}, true, DType::kFloat32);
  EXPECT_THROW(gradcheck([](const TensorList& in) { return in[0]; }, {x}), Error);
}

}  // namespace
}  // namespace ag
