#include <Eigen/Dense>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

TEST(Smoke, Eigen) {
  Eigen::Matrix2d m;
  m << 1, 2, 3, 4;
  EXPECT_DOUBLE_EQ(m.determinant(), -2.0);
  EXPECT_THAT(std::vector<int>({1, 2}), ::testing::ElementsAre(1, 2));
}

RC_GTEST_PROP(Smoke, ReverseTwiceIsIdentity, (const std::vector<int>& v)) {
  auto r = v;
  std::reverse(r.begin(), r.end());
  std::reverse(r.begin(), r.end());
  RC_ASSERT(r == v);
}
