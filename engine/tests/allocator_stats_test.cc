// Note [Per-thread byte accounting]: live bytes stay exact with tensors made on one thread and
// freed on another, after threads end (their balance is retired), and with more threads than the
// shard table holds; the peak of a single-threaded region is exact. Run under --config=tsan too.
#include "engine/memory/allocator_stats.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "engine/memory/allocator.h"
#include "engine/tensor.h"

namespace ag {
namespace {

TEST(AllocatorStats, UpdatesFromSeveralThreadsSumExactly) {
  AllocatorStats stats;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&stats, t] {
      for (int i = 0; i < 1000; ++i) stats.on_allocate(10 + t);
      for (int i = 0; i < 500; ++i) stats.on_free(10 + t);
    });
  }
  for (std::thread& th : threads) th.join();
  // Every thread has ended: its balance was retired into the shared one.
  EXPECT_EQ(stats.live_bytes(), 500 * (10 + 11 + 12 + 13));
  stats.on_free(500 * (10 + 11 + 12 + 13));
  EXPECT_EQ(stats.live_bytes(), 0);
}

TEST(AllocatorStats, AFreeOnAnotherThreadBalancesTheSum) {
  AllocatorStats stats;
  stats.on_allocate(300);
  std::thread([&stats] { stats.on_free(300); }).join();
  EXPECT_EQ(stats.live_bytes(), 0);
  std::thread([&stats] { stats.on_allocate(70); }).join();
  EXPECT_EQ(stats.live_bytes(), 70);
  stats.on_free(70);
  EXPECT_EQ(stats.live_bytes(), 0);
}

TEST(AllocatorStats, MoreLiveThreadsThanShardsStillCountExactly) {
  AllocatorStats stats;
  constexpr int kThreads = 100;  // above the shard table's 64: the rest use the shared balance
  std::vector<std::thread> threads;
  std::atomic<int> arrived{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      stats.on_allocate(8);
      arrived.fetch_add(1);
      while (arrived.load() < kThreads) std::this_thread::yield();  // all alive at once
      stats.on_allocate(8);
      stats.on_free(4);
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(stats.live_bytes(), kThreads * 12);
}

TEST(AllocatorStats, PeakOfASingleThreadedRegionIsExact) {
  AllocatorStats stats;
  std::thread([&stats] { stats.on_allocate(1000); }).join();  // another thread's live bytes
  stats.reset_peak();
  EXPECT_EQ(stats.peak_bytes(), 1000);
  stats.on_allocate(50);
  stats.on_allocate(25);
  stats.on_free(50);
  stats.on_allocate(40);
  EXPECT_EQ(stats.live_bytes(), 1065);
  EXPECT_EQ(stats.peak_bytes(), 1075);
  stats.reset_peak();
  EXPECT_EQ(stats.peak_bytes(), 1065);
}

TEST(AllocatorStats, TensorsCrossingThreadsLeaveTheDeviceCountUnchanged) {
  const int64_t base = live_bytes();
  std::vector<Tensor> made;
  std::thread([&made] {
    for (int i = 0; i < 10; ++i) made.push_back(Tensor::empty({100}, DType::kFloat32));
  }).join();
  EXPECT_EQ(live_bytes(), base + 10 * 400);
  made.clear();  // freed on this thread
  EXPECT_EQ(live_bytes(), base);
}

// Kernels' scratch space (a product's packed operand) is not tensor memory: it leaves the
// accounting alone, and is aligned for the kernels' aligned vector loads.
TEST(AllocatorStats, ScratchBlocksAreAlignedAndNotCounted) {
  const int64_t base = live_bytes();
  reset_peak_bytes();
  {
    const ScratchBlock<float> small = scratch_block<float>(3);
    const ScratchBlock<float> large = scratch_block<float>(256 * 256);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(small.get()) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(large.get()) % 64, 0u);
    large[256 * 256 - 1] = 1.0f;  // the whole block is there (ASan checks the bound)
    EXPECT_EQ(live_bytes(), base);
  }
  EXPECT_EQ(peak_bytes(), base);
}

}  // namespace
}  // namespace ag
