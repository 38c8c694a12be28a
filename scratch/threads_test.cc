#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

TEST(Threads, MutexCounter) {
  int counter = 0;
  std::mutex mu;
  std::atomic<int> a{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) {
    ts.emplace_back([&] {
      for (int j = 0; j < 1000; ++j) {
        std::lock_guard<std::mutex> lock(mu);
        ++counter;
        a.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(counter, 4000);
  EXPECT_EQ(a.load(), 4000);
}

TEST(Threads, Heap) {
  std::vector<int> v(100, 1);
  EXPECT_EQ(v[99], 1);
}
