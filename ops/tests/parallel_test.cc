// parallel_for and the kernels that use it: every chunk runs exactly once with the promised
// bounds, concurrent and nested calls complete, and split products and elementwise ops equal naive
// loops (run it under --config=tsan as well).
#include "ops/cpu/parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "engine/error.h"
#include "engine/grad_mode.h"
#include "ops/ops.h"

namespace ag::ops {
namespace {

TEST(ParallelFor, RunsEveryIndexOnceInGrainAlignedChunks) {
  for (int64_t grain : {1, 7, 64, 1000, 5000}) {
    const int64_t n = 1000;
    std::vector<std::atomic<int>> hits(n);
    std::mutex mutex;
    std::set<std::pair<int64_t, int64_t>> chunks;
    parallel_for(n, grain, [&](int64_t begin, int64_t end) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        chunks.emplace(begin, end);
      }
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
    });
    for (const auto& h : hits) ASSERT_EQ(h.load(), 1) << "grain " << grain;
    // The chunks are exactly [c * grain, min(n, (c + 1) * grain)), or [0, n) on one thread.
    if (parallel_threads() == 1) {
      EXPECT_EQ(chunks, (std::set<std::pair<int64_t, int64_t>>{{0, n}}));
      continue;
    }
    const int64_t expected = (n + grain - 1) / grain;
    ASSERT_EQ(static_cast<int64_t>(chunks.size()), expected) << "grain " << grain;
    for (const auto& [begin, end] : chunks) {
      EXPECT_EQ(begin % grain, 0) << "grain " << grain;
      EXPECT_EQ(end, std::min(n, begin + grain)) << "grain " << grain;
    }
  }
}

TEST(ParallelFor, EmptyRangesRunNothing) {
  int calls = 0;
  parallel_for(0, 4, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ParallelFor, ConcurrentAndNestedCallsComplete) {
  std::atomic<int64_t> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int r = 0; r < 50; ++r) {
        parallel_for(8, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            parallel_for(4, 1, [&](int64_t bb, int64_t ee) { total.fetch_add(ee - bb); });
          }
        });
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(total.load(), 4 * 50 * 8 * 4);
}

// parallel_one_thread_test runs this file with AG_NUM_THREADS=1.
TEST(ParallelFor, ThreadCountFollowsAgNumThreads) {
  const unsigned hardware = std::thread::hardware_concurrency();
  const char* env = std::getenv("AG_NUM_THREADS");
  if (env == nullptr) {
    EXPECT_GE(parallel_threads(), 1);
    EXPECT_LE(parallel_threads(), static_cast<int>(hardware));
    return;
  }
  EXPECT_EQ(parallel_threads(), std::min(std::atoi(env), static_cast<int>(hardware)));
  if (parallel_threads() == 1) {
    std::set<std::thread::id> ids;
    parallel_for(100, 1, [&](int64_t, int64_t) { ids.insert(std::this_thread::get_id()); });
    EXPECT_EQ(ids, std::set<std::thread::id>{std::this_thread::get_id()});
  }
}

TEST(ParallelFor, RunWithOneThreadKeepsEveryChunkOnTheCallingThread) {
  const int before = parallel_threads();
  std::set<std::thread::id> ids;
  int seen = 0;
  run_with_threads(1, [&] {
    seen = parallel_threads();
    parallel_for(100, 1, [&](int64_t, int64_t) { ids.insert(std::this_thread::get_id()); });
  });
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(ids, std::set<std::thread::id>{std::this_thread::get_id()});
  EXPECT_EQ(parallel_threads(), before);  // the limit ends with the call
  // More threads than there are is the most there are; fewer than one is an error.
  run_with_threads(before + 5, [&] { seen = parallel_threads(); });
  EXPECT_EQ(seen, before);
  EXPECT_THROW(run_with_threads(0, [] {}), Error);
}

TEST(ParallelKernels, OneThreadGivesTheBitsOfAllThreads) {
  NoGradGuard no_grad;
  // Large enough to split (Note [Shared packing] keeps the bits independent of the split).
  const Tensor a = uniform({600, 300}, -1, 1, 5);
  const Tensor b = uniform({300, 200}, -1, 1, 6);
  const std::vector<double> all = add(mm(a, b), exp(mm(a, b))).to_vector();
  std::vector<double> one;
  run_with_threads(1, [&] { one = add(mm(a, b), exp(mm(a, b))).to_vector(); });
  EXPECT_EQ(one, all);
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
