// The index arithmetic the CUDA kernels follow (cuda/layout.h), checked on the CPU: this runs
// without a GPU, so CI covers how broadcasts are merged and which reduction kernel sum_to picks
// and how it walks the input.
#include <gtest/gtest.h>

#include <vector>

#include "cuda/layout.h"
#include "ops/ops.h"
#include "ops/strided_loop.h"

namespace ag::cuda {
namespace {

// The element offset of multi-index `index` with `strides` (no merging).
int64_t offset_of(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (size_t d = 0; d < index.size(); ++d) off += index[d] * strides[d];
  return off;
}

// Checks that the layout reads, at every output index, what the unmerged strides read.
void expect_layout_matches(const Shape& shape, const std::vector<std::vector<int64_t>>& strides,
                           int expected_ndim) {
  SCOPED_TRACE(to_string(shape));
  Layout l;
  ASSERT_TRUE(make_layout(shape, strides, &l));
  EXPECT_EQ(l.ndim, expected_ndim);
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t i = 0; i < numel(shape); ++i) {
    for (size_t j = 0; j < strides.size(); ++j) {
      const int64_t expected = offset_of(index, strides[j]);
      ASSERT_EQ(input_offset(l, static_cast<int>(j), static_cast<uint32_t>(i)), expected)
          << "input " << j << " at " << i;
      ASSERT_EQ(input_offset(l, static_cast<int>(j), i), expected);
    }
    for (size_t d = index.size(); d-- > 0;) {  // odometer
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

TEST(CudaPlans, LayoutsReadWhatBroadcastingReads) {
  struct Case {
    Shape out, a, b;
    int ndim;  // after merging
  };
  const Case cases[] = {
      {{3, 4}, {3, 4}, {3, 4}, 1},
      {{5}, {5}, {}, 1},
      {{3, 4}, {3, 4}, {4}, 2},
      {{3, 4}, {3, 1}, {1, 4}, 2},
      {{2, 3, 10, 10}, {2, 3, 10, 10}, {1, 3, 1, 1}, 3},  // [2] [3] [100]
      {{2, 3, 4, 5}, {2, 3, 4, 5}, {3, 1, 5}, 4},
      {{2, 3, 4}, {1, 3, 1}, {2, 1, 4}, 3},
      {{}, {}, {}, 0},
  };
  for (const Case& c : cases) {
    expect_layout_matches(
        c.out, {ops::broadcast_strides(c.a, c.out), ops::broadcast_strides(c.b, c.out)}, c.ndim);
  }
  // Transposes: swapped strides do not merge.
  std::vector<int64_t> strides = ops::contiguous_strides({4, 5, 6});
  std::swap(strides[0], strides[2]);
  expect_layout_matches({6, 5, 4}, {strides}, 3);
}

TEST(CudaPlans, LayoutsRefuseMoreThanEightDims) {
  // Alternating broadcast dims cannot merge: 9 of them need 9 dims.
  Shape out, in;
  for (int d = 0; d < 9; ++d) {
    out.push_back(2);
    in.push_back(d % 2 ? 2 : 1);
  }
  Layout l;
  EXPECT_FALSE(make_layout(out, {ops::broadcast_strides(in, out)}, &l));
}

// Runs a plan on the host the way reduce.cu's kernels do.
std::vector<double> run_plan(const ReducePlan& p, const std::vector<double>& in) {
  std::vector<double> out(static_cast<size_t>(p.n_out), 0.0);
  switch (p.kind) {
    case ReducePlan::kZeros:
      break;
    case ReducePlan::kCopy:
      out = in;
      break;
    case ReducePlan::kAll:
      for (double v : in) out[0] += v;
      break;
    case ReducePlan::kColumns:
      for (int64_t r = 0; r < p.rows; ++r) {
        for (int64_t c = 0; c < p.cols; ++c) out[c] += in[r * p.cols + c];
      }
      break;
    case ReducePlan::kRows:
      for (int64_t r = 0; r < p.rows; ++r) {
        for (int64_t c = 0; c < p.cols; ++c) out[r] += in[r * p.cols + c];
      }
      break;
    case ReducePlan::kGeneric:
      for (int64_t j = 0; j < p.n_out; ++j) {
        const int64_t base = decompose(j, p.kept_ndim, p.kept_size, p.kept_stride);
        for (int64_t r = 0; r < p.reduced_count; ++r) {
          out[j] += in[base + decompose(r, p.reduced_ndim, p.reduced_size, p.reduced_stride)];
        }
      }
      break;
  }
  return out;
}

TEST(CudaPlans, SumToPlansSumLikeTheCpu) {
  struct Case {
    Shape from, to;  // same rank
    ReducePlan::Kind kind;
  };
  const Case cases[] = {
      {{100, 256}, {1, 256}, ReducePlan::kColumns},  // bias gradients
      {{300, 3}, {300, 1}, ReducePlan::kRows},
      {{5, 6}, {1, 1}, ReducePlan::kAll},
      {{5, 6}, {5, 6}, ReducePlan::kCopy},
      {{2, 3, 10, 10}, {1, 3, 1, 1}, ReducePlan::kGeneric},
      {{4, 5, 6}, {4, 1, 6}, ReducePlan::kGeneric},
      {{4, 5, 6}, {1, 5, 1}, ReducePlan::kGeneric},
      {{4, 1, 6, 7}, {1, 1, 6, 7}, ReducePlan::kColumns},  // size-1 dims dropped
      {{4, 5, 6, 7}, {4, 5, 1, 1}, ReducePlan::kRows},     // merged on both sides
      {{2, 3, 4, 5, 6}, {2, 1, 4, 1, 6}, ReducePlan::kGeneric},
      {{0, 3}, {1, 3}, ReducePlan::kZeros},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(to_string(c.from) + " -> " + to_string(c.to));
    ReducePlan plan;
    ASSERT_TRUE(plan_sum_to(c.from, c.to, &plan));
    EXPECT_EQ(plan.kind, c.kind);
    Tensor in = ops::uniform(c.from, -1, 1, seed++, DType::kFloat64);
    const std::vector<double> expected = ops::sum_to(in, c.to).to_vector();
    const std::vector<double> got = run_plan(plan, in.to_vector());
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-12) << i;
  }
}

}  // namespace
}  // namespace ag::cuda
