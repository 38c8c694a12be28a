// Shape keeps up to Shape::kInline dimensions inside the object and spills to the heap beyond;
// both representations must behave like std::vector<int64_t>.
#include "engine/memory/shape.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace ag {
namespace {

std::vector<int64_t> iota(size_t n) {
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int64_t>(i + 1);
  return v;
}

// Every size up to twice the inline capacity: inline, at the boundary and spilled.
class ShapeSizes : public ::testing::TestWithParam<size_t> {};

TEST_P(ShapeSizes, CopiesAndMovesKeepTheDims) {
  const std::vector<int64_t> dims = iota(GetParam());
  Shape s(dims);
  EXPECT_EQ(std::vector<int64_t>(s), dims);
  Shape copy = s;
  EXPECT_EQ(copy, s);
  if (!dims.empty()) {
    copy[0] = -1;
    EXPECT_NE(copy, s);  // a deep copy
  }
  Shape moved = std::move(copy);
  EXPECT_EQ(moved.size(), dims.size());
  EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): a moved-from Shape is empty
  Shape assigned{9};
  assigned = s;
  EXPECT_EQ(assigned, s);
  assigned = Shape{7, 8};
  EXPECT_EQ(assigned, (Shape{7, 8}));
}

TEST_P(ShapeSizes, EditsMatchStdVector) {
  const size_t n = GetParam();
  Shape s;
  std::vector<int64_t> v;
  for (size_t i = 0; i < n; ++i) {
    s.push_back(static_cast<int64_t>(i));
    v.push_back(static_cast<int64_t>(i));
  }
  s.insert(s.begin(), 100);
  v.insert(v.begin(), 100);
  const std::vector<int64_t> extra = {7, 8};
  s.insert(s.begin() + 1, extra.begin(), extra.end());
  v.insert(v.begin() + 1, extra.begin(), extra.end());
  EXPECT_EQ(std::vector<int64_t>(s), v);
  s.erase(s.begin());
  v.erase(v.begin());
  EXPECT_EQ(std::vector<int64_t>(s), v);
  s.erase(s.begin(), s.begin() + 1);
  v.erase(v.begin(), v.begin() + 1);
  EXPECT_EQ(std::vector<int64_t>(s), v);
  s.resize(n + 3, 5);
  v.resize(n + 3, 5);
  EXPECT_EQ(std::vector<int64_t>(s), v);
  s.pop_back();
  v.pop_back();
  EXPECT_EQ(std::vector<int64_t>(s), v);
  EXPECT_EQ(s.back(), v.back());
  EXPECT_EQ(numel(s), [&] {
    int64_t p = 1;
    for (int64_t d : v) p *= d;
    return p;
  }());
}

INSTANTIATE_TEST_SUITE_P(InlineAndSpilled, ShapeSizes,
                         ::testing::Range(size_t{0}, 2 * Shape::kInline + 1));

TEST(Shape, ComparesAndPrints) {
  EXPECT_EQ(Shape({2, 3}), Shape(std::vector<int64_t>{2, 3}));
  EXPECT_NE(Shape({2, 3}), Shape({2, 3, 1}));
  EXPECT_LT(Shape({2, 3}), Shape({2, 4}));
  EXPECT_EQ(Shape(3, 7), Shape({7, 7, 7}));
  EXPECT_EQ(to_string(Shape({2, 3})), "[2, 3]");
  EXPECT_EQ(to_string(Shape{}), "[]");
  EXPECT_EQ(numel(Shape{}), 1);
}

}  // namespace
}  // namespace ag
