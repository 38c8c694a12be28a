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

// Note [Upgrading a plain pointer]: a marked object counts and dies as any other, upgrade()
// adds an owner while one exists, and finds none once the last owner let go.
TEST(Ref, UpgradeOfAMarkedObject) {
  int deletions = 0;
  Ref<Counted> a = Ref<Counted>::make(&deletions);
  EXPECT_FALSE(a.upgradable());
  a.mark_upgradable();
  EXPECT_TRUE(a.upgradable());
  EXPECT_EQ(a.use_count(), 1u);
  Counted* plain = a.get();
  {
    Ref<Counted> b = Ref<Counted>::upgrade(plain);
    EXPECT_TRUE(b == a);
    EXPECT_EQ(a.use_count(), 2u);
  }
  EXPECT_EQ(a.use_count(), 1u);
  Ref<Counted> b = std::move(a);
  EXPECT_EQ(deletions, 0);
  b = nullptr;
  EXPECT_EQ(deletions, 1);  // a marked object dies by the decrement, at 1 owner as any other
}

// A marked object whose count reached 0 is not brought back: upgrade() inside its destructor
// (where the AccumulateGrad's lock would hold it) finds it dying.
struct UpgradesItself : RefCounted {
  explicit UpgradesItself(bool* found) : found(found) {}
  ~UpgradesItself() { *found = Ref<UpgradesItself>::upgrade(this) != nullptr; }
  bool* found;
};

TEST(Ref, NoUpgradeOfADyingObject) {
  bool found = true;
  Ref<UpgradesItself> a = Ref<UpgradesItself>::make(&found);
  a.mark_upgradable();
  a = nullptr;
  EXPECT_FALSE(found);
}

}  // namespace
}  // namespace ag
