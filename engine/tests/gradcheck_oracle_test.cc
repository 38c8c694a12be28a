// The oracle's oracle: gradcheck itself against planted wrong gradients of every kind (a NaN or an
// infinity where a number belongs, a sign, a swapped pair, an error just above and just below the
// tolerance) on a linear function, whose central differences are exact up to rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/call.h"
#include "engine/gradcheck.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::leaf;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// y = 3 x elementwise (x of 4 elements), with a backward that returns the true 3 g changed by
// `plant`, and a forward whose element `nan_at` (if >= 0) is NaN: the planted records.
struct Plant {
  std::vector<double> (*gradient)(std::vector<double>) = [](std::vector<double> g) { return g; };
  int64_t nan_at = -1;
};

class PlantedTriple final : public Node {
 public:
  PlantedTriple(const Tensor& x, Plant plant) : Node({gradient_edge(x)}), plant_(plant) {
    add_input_metadata(TensorMeta::of(x));
  }
  TensorList apply(TensorList&& grads, const Call&) override {
    const Tensor right = ops::mul(grads[0], 3.0);
    return {ops::from_vector(plant_.gradient(right.to_vector()), right.shape(), right.dtype())};
  }
  std::string name() const override { return "PlantedTriple"; }

 private:
  Plant plant_;
};

GradcheckResult check_planted(Plant plant, const GradcheckOptions& options = {}) {
  Tensor x = leaf({0.3, -1.2, 2.0, 0.7}, {4});
  return gradcheck(
      [&](const TensorList& in) {
        std::vector<double> v = ops::mul(in[0].detach(), 3.0).to_vector();
        if (plant.nan_at >= 0) v[static_cast<size_t>(plant.nan_at)] = kNaN;
        Tensor out = ops::from_vector(v, {4}, DType::kFloat64);
        out.impl()->requires_grad = true;
        out.impl()->grad_fn = std::make_shared<PlantedTriple>(in[0], plant);
        return out;
      },
      {x}, options);
}

TEST(GradcheckOracle, PassesTheUnplantedGradient) {
  const GradcheckResult r = check_planted({});
  EXPECT_TRUE(r.passed) << r.report;
}

TEST(GradcheckOracle, FailsOnANaNWhereTheGradientIsANumber) {
  const GradcheckResult r = check_planted({[](std::vector<double> g) {
    g[2] = kNaN;
    return g;
  }});
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.report.find("input 0[2]"), std::string::npos) << r.report;
}

TEST(GradcheckOracle, FailsOnAnInfinityOfEitherSignWhereTheGradientIsANumber) {
  EXPECT_FALSE(check_planted({[](std::vector<double> g) {
                 g[1] = kInf;
                 return g;
               }}).passed);
  EXPECT_FALSE(check_planted({[](std::vector<double> g) {
                 g[1] = -kInf;
                 return g;
               }}).passed);
}

TEST(GradcheckOracle, FailsWhenTheNumericalDerivativeIsNaNAndTheAnalyticalANumber) {
  // Output element 1 is NaN at every point: its finite differences are NaN, its gradient is 3.
  Plant plant;
  plant.nan_at = 1;
  const GradcheckResult r = check_planted(plant);
  EXPECT_FALSE(r.passed) << "a NaN numerical derivative agreed with the number 3";
}

TEST(GradcheckOracle, FailsOnTheSignOfOneElement) {
  EXPECT_FALSE(check_planted({[](std::vector<double> g) {
                 g[3] = -g[3];
                 return g;
               }}).passed);
}

TEST(GradcheckOracle, FailsOnTwoSwappedElements) {
  // Each element's gradient is 3 at its own place and 0 elsewhere: a swap moves a 3 off the
  // diagonal.
  EXPECT_FALSE(check_planted({[](std::vector<double> g) {
                 std::swap(g[0], g[1]);
                 return g;
               }}).passed);
}

// err > atol + rtol |numerical|: an error of 0.9 of the bound passes, 1.1 of it fails, for the
// absolute and for the relative part alone.
TEST(GradcheckOracle, AnErrorJustBelowTheAbsoluteTolerancePassesAndJustAboveFails) {
  GradcheckOptions o;
  o.atol = 1e-3;
  o.rtol = 0;
  const GradcheckResult below = check_planted({[](std::vector<double> g) {
                                                g[0] += 0.9e-3;
                                                return g;
                                              }},
                                              o);
  EXPECT_TRUE(below.passed) << below.report;
  EXPECT_NEAR(below.max_abs_error, 0.9e-3, 1e-8);
  const GradcheckResult above = check_planted({[](std::vector<double> g) {
                                                g[0] += 1.1e-3;
                                                return g;
                                              }},
                                              o);
  EXPECT_FALSE(above.passed);
  EXPECT_NEAR(above.max_abs_error, 1.1e-3, 1e-8);
}

TEST(GradcheckOracle, AnErrorJustBelowTheRelativeTolerancePassesAndJustAboveFails) {
  GradcheckOptions o;
  o.atol = 0;
  o.rtol = 1e-2;  // of the numerical derivative, 3: a bound of 0.03
  EXPECT_TRUE(check_planted({[](std::vector<double> g) {
                              if (g[0] != 0) g[0] += 0.027;  // d(output 0)/d(input 0) alone
                              return g;
                            }},
                            o)
                  .passed);
  EXPECT_FALSE(check_planted({[](std::vector<double> g) {
                               if (g[0] != 0) g[0] += 0.033;  // d(output 0)/d(input 0) alone
                               return g;
                             }},
                             o)
                   .passed);
  // The relative bound is of the numerical derivative's magnitude: a gradient of -3 where the
  // truth is 3 is not within rtol of it.
  EXPECT_FALSE(check_planted({[](std::vector<double> g) {
                               g[0] = -g[0];
                               return g;
                             }},
                             o)
                   .passed);
}

}  // namespace
}  // namespace ag
