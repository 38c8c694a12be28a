// parallel_for and the kernels that use it: every index runs exactly once, concurrent and nested
// calls fall back to the caller without deadlock, and split products and elementwise ops equal
// naive loops (run it under --config=tsan as well).
#include "ops/cpu/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "engine/grad_mode.h"
#include "ops/ops.h"

namespace ag::ops {
namespace {

TEST(ParallelFor, RunsEveryIndexOnce) {
  std::vector<std::atomic<int>> hits(1000);
  parallel_for(1000, [&](int64_t i) { hits[i].fetch_add(1); });
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ParallelFor, ConcurrentAndNestedCallsComplete) {
  std::atomic<int64_t> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int r = 0; r < 50; ++r) {
        parallel_for(8, [&](int64_t) { parallel_for(4, [&](int64_t) { total.fetch_add(1); }); });
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(total.load(), 4 * 50 * 8 * 4);
}

TEST(ParallelKernels, LargeProductsAndElementwiseMatchNaiveLoops) {
  NoGradGuard no_grad;
  const int64_t m = 300, k = 70, n = 90;  // above the split threshold
  Tensor a = uniform({m, k}, -1, 1, 1, DType::kFloat64);
  Tensor b = uniform({k, n}, -1, 1, 2, DType::kFloat64);
  Tensor c = mm(a, b);
  const std::vector<double> va = a.to_vector(), vb = b.to_vector(), vc = c.to_vector();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double expected = 0;
      for (int64_t p = 0; p < k; ++p) expected += va[i * k + p] * vb[p * n + j];
      ASSERT_NEAR(vc[i * n + j], expected, 1e-12) << i << "," << j;
    }
  }
  Tensor x = uniform({1 << 17}, -1, 1, 3, DType::kFloat64);
  Tensor y = uniform({1 << 17}, -1, 1, 4, DType::kFloat64);
  const std::vector<double> vx = x.to_vector(), vy = y.to_vector();
  const std::vector<double> sum = add(x, y).to_vector(), e = exp(x).to_vector();
  for (size_t i = 0; i < vx.size(); ++i) {
    ASSERT_EQ(sum[i], vx[i] + vy[i]) << i;
    ASSERT_NEAR(e[i], std::exp(vx[i]), 1e-15 * std::exp(vx[i]) * 4) << i;
  }
}

}  // namespace
}  // namespace ag::ops
