// Note [Intrusive reference counts]: Ref counts owners exactly, deletes once, and stays exact when
// threads copy and drop the same object concurrently (the TSan run of --config=tsan checks the
// last part for races).
#include "engine/memory/ref.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace ag {
namespace {

struct Counted : RefCounted {
  explicit Counted(int* deletions) : deletions(deletions) {}
  ~Counted() { ++*deletions; }
  int* deletions;
};

TEST(Ref, CountsOwnersAndDeletesOnce) {
  int deletions = 0;
  {
    Ref<Counted> a = Ref<Counted>::make(&deletions);
    EXPECT_EQ(a.use_count(), 1u);
    Ref<Counted> b = a;
    EXPECT_EQ(a.use_count(), 2u);
    EXPECT_TRUE(a == b);
    Ref<Counted> c = std::move(b);
    EXPECT_EQ(b, nullptr);  // NOLINT: a moved-from Ref is null
    EXPECT_EQ(c.use_count(), 2u);
    c = nullptr;
    EXPECT_EQ(a.use_count(), 1u);
    EXPECT_EQ(deletions, 0);
  }
  EXPECT_EQ(deletions, 1);
}

TEST(Ref, AssignmentReleasesTheOldObject) {
  int first = 0, second = 0;
  Ref<Counted> r = Ref<Counted>::make(&first);
  r = Ref<Counted>::make(&second);
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 0);
  r = r;  // self-assignment keeps it  // NOLINT
  EXPECT_EQ(second, 0);
  EXPECT_EQ(r.use_count(), 1u);
}

TEST(Ref, ConcurrentCopiesAndDropsDeleteExactlyOnce) {
  constexpr int kThreads = 4, kRounds = 2000;
  for (int trial = 0; trial < 20; ++trial) {
    int deletions = 0;
    Ref<Counted> shared = Ref<Counted>::make(&deletions);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([copy = shared]() mutable {
        for (int i = 0; i < kRounds; ++i) {
          Ref<Counted> more = copy;
          Ref<Counted> moved = std::move(more);
        }
        copy = nullptr;  // each thread drops its copy while the others still work
      });
    }
    shared = nullptr;
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(deletions, 1);
  }
}

}  // namespace
}  // namespace ag
