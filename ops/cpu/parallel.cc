#include "ops/cpu/parallel.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace ag::ops {
namespace {

class Pool {
 public:
  Pool() {
    const unsigned hw = std::thread::hardware_concurrency();
    for (unsigned i = 1; i < hw; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  void run(int64_t n, const std::function<void(int64_t)>& fn) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock() || workers_.empty() || n <= 1) {
      for (int64_t i = 0; i < n; ++i) fn(i);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn_ = &fn;
      n_ = n;
      next_.store(0);
      active_.store(static_cast<int>(workers_.size()));
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    drain();
    // The workers' share is usually done moments later: spin before sleeping (as in work()).
    for (int spin = 0; spin < kSpins && active_.load(std::memory_order_acquire) > 0; ++spin) {
      __builtin_ia32_pause();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return active_.load() == 0; });
    fn_ = nullptr;
  }

 private:
  // Takes indices until none are left (callers and workers alike).
  void drain() {
    for (int64_t i = next_.fetch_add(1); i < n_; i = next_.fetch_add(1)) (*fn_)(i);
  }

  void work() {
    uint64_t seen = 0;
    while (true) {
      // Kernels come in bursts (one training step calls dozens), and waking a sleeping thread
      // costs tens of microseconds here: spin briefly for the next job before sleeping.
      for (int spin = 0; spin < kSpins && generation_.load(std::memory_order_acquire) == seen;
           ++spin) {
        __builtin_ia32_pause();
      }
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
        if (stop_) return;
        seen = generation_.load();
      }
      drain();
      if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_one();
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex busy_;   // held by the one parallel_for running on the pool
  std::mutex mutex_;  // guards the job fields below
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> active_{0};  // workers still on the current job
  std::atomic<uint64_t> generation_{0};
  static constexpr int kSpins = 20000;  // about 50 us of pause instructions
  bool stop_ = false;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void parallel_for(int64_t n, const std::function<void(int64_t)>& fn) { pool().run(n, fn); }

int parallel_threads() { return pool().threads(); }

}  // namespace ag::ops
