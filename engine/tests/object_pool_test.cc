// Note [Pooled tensor metadata]: blocks are recycled per thread, bounded, may be freed on another
// thread than the one that took them, and are returned to the heap when a thread ends (the
// LeakSanitizer run of --config=asan checks that last part).
#include "engine/memory/object_pool.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "engine/memory/allocator.h"
#include "engine/tensor.h"
#include "ops/ops.h"

namespace ag {
namespace {

using Pool = BlockPool<96>;

TEST(ObjectPool, ReusesTheLastFreedBlock) {
  if (!kPoolObjects) GTEST_SKIP() << "the pool is bypassed under AddressSanitizer";
  void* a = Pool::allocate();
  Pool::deallocate(a);
  const size_t cached = Pool::cached_blocks();
  EXPECT_GE(cached, 1u);
  EXPECT_EQ(Pool::allocate(), a);
  EXPECT_EQ(Pool::cached_blocks(), cached - 1);
  Pool::deallocate(a);
}

TEST(ObjectPool, KeepsAtMostItsBoundPerThread) {
  if (!kPoolObjects) GTEST_SKIP() << "the pool is bypassed under AddressSanitizer";
  std::vector<void*> blocks;
  for (size_t i = 0; i < Pool::kMaxBlocks + 10; ++i) blocks.push_back(Pool::allocate());
  for (void* b : blocks) Pool::deallocate(b);
  EXPECT_EQ(Pool::cached_blocks(), Pool::kMaxBlocks);
}

TEST(ObjectPool, TensorsCrossThreadsIntact) {
  const int64_t base = live_bytes();
  std::vector<Tensor> made;
  std::thread producer([&] {
    for (int i = 0; i < 100; ++i) made.push_back(ops::full({4}, i));
  });
  producer.join();  // the producer's pool is gone now; its tensors live on
  for (int i = 0; i < 100; ++i) EXPECT_EQ(made[i].to_vector(), std::vector<double>(4, i));
  EXPECT_EQ(live_bytes(), base + 100 * 16);
  std::thread consumer([&] { made.clear(); });  // freed into the consumer's pool
  consumer.join();
  EXPECT_EQ(live_bytes(), base);
}

// A pooled object's block is reused by the next object of its type on the same thread.
TEST(ObjectPool, PooledObjectsReuseTheirBlocks) {
  if (!kPoolObjects) GTEST_SKIP() << "the pool is bypassed under AddressSanitizer";
  struct Thing : PooledObject<Thing> {
    int64_t values[5] = {};
  };
  Thing* first = new Thing;
  first->values[4] = 7;
  delete first;
  Thing* second = new Thing;
  EXPECT_EQ(second, first);
  EXPECT_EQ(second->values[4], 0);  // constructed afresh
  delete second;
  Thing* many = new Thing[3];  // arrays bypass the pool
  many[2].values[4] = 7;
  EXPECT_EQ(many[2].values[4], 7);
  delete[] many;
}

// allocate_shared with a PoolAllocator: the object and its control block share one pooled block.
TEST(ObjectPool, SharedObjectsReuseTheirBlocks) {
  if (!kPoolObjects) GTEST_SKIP() << "the pool is bypassed under AddressSanitizer";
  struct Thing {
    int64_t values[5] = {};
  };
  std::shared_ptr<Thing> first = std::allocate_shared<Thing>(PoolAllocator<Thing>());
  first->values[4] = 7;
  const Thing* where = first.get();
  std::weak_ptr<Thing> watch = first;
  first.reset();
  EXPECT_TRUE(watch.expired());
  watch.reset();  // the block goes back to the pool with the last weak reference
  std::shared_ptr<Thing> second = std::allocate_shared<Thing>(PoolAllocator<Thing>());
  EXPECT_EQ(second.get(), where);
  EXPECT_EQ(second->values[4], 0);  // constructed afresh
}

}  // namespace
}  // namespace ag
