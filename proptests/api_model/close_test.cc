// The oracle's oracle: the API model's value check (close(), sut.h) against planted wrong values
// of every kind: a NaN or an infinity against a number, an infinity of the other sign, a sign, a
// difference just above and just below the tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "proptests/api_model/sut.h"

namespace ag::proptests {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ApiModelValueCheck, NaNIsCloseOnlyToNaN) {
  EXPECT_TRUE(close(kNaN, kNaN));
  for (double x : {0.0, 1.0, -2.5, 1e300, kInf, -kInf}) {
    EXPECT_FALSE(close(kNaN, x)) << x;
    EXPECT_FALSE(close(x, kNaN)) << x;
  }
}

TEST(ApiModelValueCheck, AnInfinityIsCloseOnlyToTheSameInfinity) {
  EXPECT_TRUE(close(kInf, kInf));
  EXPECT_TRUE(close(-kInf, -kInf));
  EXPECT_FALSE(close(kInf, -kInf));
  EXPECT_FALSE(close(-kInf, kInf));
  for (double x : {0.0, 1.0, -2.5, 1e300, -1e300, std::numeric_limits<double>::max()}) {
    EXPECT_FALSE(close(kInf, x)) << x;
    EXPECT_FALSE(close(x, kInf)) << x;
    EXPECT_FALSE(close(-kInf, x)) << x;
    EXPECT_FALSE(close(x, -kInf)) << x;
  }
}

TEST(ApiModelValueCheck, ASignIsADifference) {
  EXPECT_FALSE(close(0.5, -0.5));
  EXPECT_FALSE(close(-1e6, 1e6));
  EXPECT_TRUE(close(0.0, -0.0));  // zeros of either sign are the same value
}

// |a - b| <= 1e-8 max(1, |a|, |b|): 0.9 of the bound is close, 1.1 of it is not, below 1 (where
// the bound is absolute) and above (where it is relative).
TEST(ApiModelValueCheck, ADifferenceJustBelowTheToleranceIsCloseAndJustAboveIsNot) {
  for (double x : {0.0, 0.25, -0.5}) {
    EXPECT_TRUE(close(x, x + 0.9e-8)) << x;
    EXPECT_TRUE(close(x + 0.9e-8, x)) << x;
    EXPECT_FALSE(close(x, x + 1.1e-8)) << x;
    EXPECT_FALSE(close(x + 1.1e-8, x)) << x;
  }
  for (double x : {1e4, -3e6}) {
    const double bound = 1e-8 * std::fabs(x);
    EXPECT_TRUE(close(x, x + 0.9 * bound)) << x;
    EXPECT_FALSE(close(x, x + 1.1 * bound)) << x;
    EXPECT_TRUE(close(x, x - 0.9 * bound)) << x;
    EXPECT_FALSE(close(x, x - 1.1 * bound)) << x;
  }
}

}  // namespace
}  // namespace ag::proptests
