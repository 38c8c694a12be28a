// The oracle's oracle: the conformance records' comparison (lines_agree, records.h) and the digest
// it compares, against planted wrong records of every kind: a NaN or an infinity against a number,
// an infinity of the other sign, a sign, a swapped pair, a difference just above and just below
// the tolerance, for plain values and for a digest's d and a.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "proptests/conformance/records.h"
#include "proptests/conformance/text.h"

namespace ag::proptests {
namespace {

// "s1 v1 [n] rg=1 leaf=0 = x0 x1 ...", with the numbers as the records print them.
std::string value_line(const std::vector<double>& values) {
  std::string line = "s1 v1 [" + std::to_string(values.size()) + "] rg=1 leaf=0 =";
  for (double x : values) line += " " + format_double(x);
  return line;
}

// "end v1 rg=1 leaf=0 d=D a=A n=N"
std::string digest_line(double d, double a, int64_t n) {
  return "end v1 rg=1 leaf=0 d=" + format_double(d) + " a=" + format_double(a) +
         " n=" + std::to_string(n);
}

bool agree(const std::string& expected, const std::string& actual, const Tolerance& t = {}) {
  NumberStats stats;
  return lines_agree(expected, actual, t, stats);
}

const std::vector<double> kValues = {0.5, -1.25, 2.0, 0.75};

std::vector<double> with(std::vector<double> v, size_t i, double x) {
  v[i] = x;
  return v;
}

TEST(RecordsOracle, IdenticalLinesAgreeAndCountEveryNumberAsBitwise) {
  NumberStats stats;
  EXPECT_TRUE(lines_agree(value_line(kValues), value_line(kValues), Tolerance{}, stats));
  EXPECT_EQ(stats.numbers, 4);
  EXPECT_EQ(stats.bitwise, 4);
}

TEST(RecordsOracle, NaNAgreesOnlyWithNaN) {
  const double nan = std::nan("");
  EXPECT_TRUE(agree(value_line(with(kValues, 1, nan)), value_line(with(kValues, 1, nan))));
  // Either side: a NaN expected and a number got, and a number expected and a NaN got.
  EXPECT_FALSE(agree(value_line(with(kValues, 1, nan)), value_line(kValues)));
  EXPECT_FALSE(agree(value_line(kValues), value_line(with(kValues, 1, nan))));
  // Not even under a tolerance that would take any number.
  const Tolerance loose{1e300, 1e300};
  EXPECT_FALSE(agree(value_line(with(kValues, 1, nan)), value_line(kValues), loose));
  EXPECT_FALSE(agree(value_line(kValues), value_line(with(kValues, 1, nan)), loose));
  EXPECT_FALSE(agree(value_line(with(kValues, 1, nan)), value_line(with(kValues, 1, INFINITY))));
}

TEST(RecordsOracle, AnInfinityAgreesOnlyWithTheSameInfinity) {
  const double inf = INFINITY;
  for (double x : {inf, -inf}) {
    EXPECT_TRUE(agree(value_line(with(kValues, 2, x)), value_line(with(kValues, 2, x))));
    EXPECT_FALSE(agree(value_line(with(kValues, 2, x)), value_line(kValues)));
    EXPECT_FALSE(agree(value_line(kValues), value_line(with(kValues, 2, x))));
    EXPECT_FALSE(agree(value_line(with(kValues, 2, x)), value_line(with(kValues, 2, -x))));
    // A huge number is still not infinite.
    EXPECT_FALSE(agree(value_line(with(kValues, 2, x)),
                       value_line(with(kValues, 2, x > 0 ? 1e308 : -1e308))));
  }
}

TEST(RecordsOracle, ASignOrASwapIsADifference) {
  EXPECT_FALSE(agree(value_line(kValues), value_line(with(kValues, 0, -0.5))));
  std::vector<double> swapped = kValues;
  std::swap(swapped[1], swapped[2]);
  EXPECT_FALSE(agree(value_line(kValues), value_line(swapped)));
}

// |x - y| <= atol + rtol max(|x|, |y|): 0.9 of the bound agrees, 1.1 of it does not, for the
// relative part (a value of 1e6), the absolute part (a value of 0), and the default tolerance.
TEST(RecordsOracle, ADifferenceJustBelowTheToleranceAgreesAndJustAboveDoesNot) {
  const Tolerance t{1e-6, 1e-3};  // rtol, atol
  struct Case {
    double x, bound;
  };
  for (const Case& c : {Case{1e6, 1e-3 + 1e-6 * 1e6}, Case{0.0, 1e-3}}) {
    // The bound is of max(|x|, |y|), y = x + delta: close enough to x's at these scales.
    EXPECT_TRUE(agree(value_line(with(kValues, 3, c.x)),
                      value_line(with(kValues, 3, c.x + 0.9 * c.bound)), t))
        << c.x;
    EXPECT_FALSE(agree(value_line(with(kValues, 3, c.x)),
                       value_line(with(kValues, 3, c.x + 1.1 * c.bound)), t))
        << c.x;
    EXPECT_TRUE(agree(value_line(with(kValues, 3, c.x)),
                      value_line(with(kValues, 3, c.x - 0.9 * c.bound)), t))
        << c.x;
    EXPECT_FALSE(agree(value_line(with(kValues, 3, c.x)),
                       value_line(with(kValues, 3, c.x - 1.1 * c.bound)), t))
        << c.x;
  }
  // The default: rtol 1e-12, atol 1e-14, a bound of 1.01e-12 at 1 and of 1e-14 at 0.
  EXPECT_TRUE(
      agree(value_line(with(kValues, 3, 1.0)), value_line(with(kValues, 3, 1.0 + 0.9e-12))));
  EXPECT_FALSE(
      agree(value_line(with(kValues, 3, 1.0)), value_line(with(kValues, 3, 1.0 + 1.2e-12))));
  EXPECT_TRUE(agree(value_line(with(kValues, 3, 0.0)), value_line(with(kValues, 3, 0.9e-14))));
  EXPECT_FALSE(agree(value_line(with(kValues, 3, 0.0)), value_line(with(kValues, 3, 1.1e-14))));
}

TEST(RecordsOracle, CountsAndFlagsAreExactWhateverTheTolerance) {
  const Tolerance loose{1.0, 1.0};
  EXPECT_FALSE(agree(digest_line(1, 1, 4), digest_line(1, 1, 5), loose));
  EXPECT_FALSE(agree("s1 v1 [4] rg=1 leaf=0 = 1", "s1 v1 [5] rg=1 leaf=0 = 1", loose));
  EXPECT_FALSE(agree("s1 v1 [4] rg=1 leaf=0 = 1", "s1 v1 [4] rg=0 leaf=0 = 1", loose));
}

// A digest "d=D a=A n=N" agrees within 2 N atol + rtol A (d's scale is a, records.h): just below
// agrees, just above does not, for d and for a; NaN and infinities as for plain numbers.
TEST(RecordsOracle, ADigestAgreesJustBelowItsToleranceAndNotJustAbove) {
  const Tolerance t{1e-6, 1e-3};
  const double d = 0.5, a = 1e3;
  const int64_t n = 10;
  const double d_bound = 2 * n * 1e-3 + 1e-6 * a;  // 0.021: d = 0.5 is far below the scale a
  EXPECT_TRUE(agree(digest_line(d, a, n), digest_line(d + 0.9 * d_bound, a, n), t));
  EXPECT_FALSE(agree(digest_line(d, a, n), digest_line(d + 1.1 * d_bound, a, n), t));
  EXPECT_TRUE(agree(digest_line(d, a, n), digest_line(d - 0.9 * d_bound, a, n), t));
  EXPECT_FALSE(agree(digest_line(d, a, n), digest_line(d - 1.1 * d_bound, a, n), t));
  const double a_bound = 2 * n * 1e-3 + 1e-6 * a;  // a's scale is itself
  EXPECT_TRUE(agree(digest_line(d, a, n), digest_line(d, a + 0.9 * a_bound, n), t));
  EXPECT_FALSE(agree(digest_line(d, a, n), digest_line(d, a + 1.1 * a_bound, n), t));
  // One value's worth of atol, not n's, when n is 1.
  EXPECT_TRUE(agree(digest_line(0, 0, 1), digest_line(0.9 * 2e-3, 0, 1), t));
  EXPECT_FALSE(agree(digest_line(0, 0, 1), digest_line(1.1 * 2e-3, 0, 1), t));
  const double nan = std::nan("");
  EXPECT_FALSE(agree(digest_line(nan, a, n), digest_line(d, a, n), t));
  EXPECT_FALSE(agree(digest_line(d, a, n), digest_line(nan, a, n), t));
  EXPECT_TRUE(agree(digest_line(nan, nan, n), digest_line(nan, nan, n), t));
  EXPECT_FALSE(agree(digest_line(INFINITY, INFINITY, n), digest_line(d, a, n), t));
  EXPECT_FALSE(agree(digest_line(-INFINITY, INFINITY, n), digest_line(INFINITY, INFINITY, n), t));
  EXPECT_FALSE(agree(digest_line(-d, a, n), digest_line(d, a, n), t));  // a sign
}

// The digest sees what the comparison of its line must catch: a swap of two values, a sign, a NaN
// or an infinity anywhere, one value more; and sums |x| into a whatever the signs.
TEST(RecordsOracle, TheDigestChangesWithEverySwapSignAndNonFiniteValue) {
  const std::vector<double> v = {0.5, -1.25, 2.0, 0.75, -0.3, 1.5, 0.25};
  const Digest base = digest(v);
  EXPECT_EQ(base.n, 7);
  double abs_sum = 0;
  for (double x : v) abs_sum += std::fabs(x);
  EXPECT_GT(base.a, abs_sum);      // weights >= 1
  EXPECT_LT(base.a, 2 * abs_sum);  // weights < 2
  for (size_t i = 0; i < v.size(); ++i) {
    for (size_t j = i + 1; j < v.size(); ++j) {
      if (v[i] == v[j]) continue;
      std::vector<double> s = v;
      std::swap(s[i], s[j]);
      const Digest g = digest(s);
      EXPECT_FALSE(agree(digest_line(base.d, base.a, base.n), digest_line(g.d, g.a, g.n)))
          << "swap " << i << " " << j;
    }
    std::vector<double> neg = v;
    neg[i] = -neg[i];
    const Digest g = digest(neg);
    EXPECT_EQ(g.a, base.a) << i;  // a does not see a sign: d must
    EXPECT_FALSE(agree(digest_line(base.d, base.a, base.n), digest_line(g.d, g.a, g.n))) << i;
    EXPECT_TRUE(std::isnan(digest(with(v, i, std::nan(""))).d)) << i;
    EXPECT_TRUE(std::isinf(digest(with(v, i, INFINITY)).d)) << i;
    EXPECT_TRUE(std::isinf(digest(with(v, i, INFINITY)).a)) << i;
  }
  std::vector<double> longer = v;
  longer.push_back(0);
  EXPECT_EQ(digest(longer).n, 8);
}

}  // namespace
}  // namespace ag::proptests
