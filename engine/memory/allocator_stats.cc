#include "engine/memory/allocator_stats.h"

#include <mutex>
#include <vector>

#include "engine/memory/thread_cache.h"

namespace ag {

struct AllocatorStats::Registry {
  static constexpr int kMaxShards = 64;

  std::atomic<int64_t> shared{0};  // ended threads' balances, and updates made without a shard
  std::atomic<int64_t> peak{0};
  std::atomic<int> count{0};  // shards[0, count) have been handed to threads
  Shard shards[kMaxShards];
  std::mutex mutex;          // guards publishing shards and `idle`
  std::vector<Shard*> idle;  // shards of ended threads (balance 0), reused by new threads

  int64_t total() const {
    int64_t sum = shared.load(std::memory_order_relaxed);
    const int n = count.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
      sum += shards[i].live.load(std::memory_order_relaxed);
    }
    return sum;
  }

  void raise_peak(int64_t live) {
    int64_t p = peak.load(std::memory_order_relaxed);
    while (live > p && !peak.compare_exchange_weak(p, live, std::memory_order_relaxed)) {
    }
  }

  // A shard for a new thread, or null when the table is full.
  Shard* take() {
    std::lock_guard<std::mutex> lock(mutex);
    if (!idle.empty()) {
      Shard* s = idle.back();
      idle.pop_back();
      return s;
    }
    const int n = count.load(std::memory_order_relaxed);
    if (n == kMaxShards) return nullptr;
    count.store(n + 1, std::memory_order_release);
    return &shards[n];
  }

  // The thread that owned `s` is ending: move its balance to `shared` and keep the shard for reuse.
  void retire(Shard* s) {
    shared.fetch_add(s->live.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mutex);
    idle.push_back(s);
  }
};

namespace {

// Slots in the shard table are never reused (a thread's slot may still hold a shard of a
// destroyed AllocatorStats).
constexpr int kMaxStats = AllocatorStats::kMaxStats;
std::atomic<int> next_index{0};
using detail::t_shard;

// Retires the calling thread's shards when it ends (created with the first shard; Note [Thread
// caches]). Afterwards t_shard is null again, so late frees go to the shared balance.
struct ShardOwner {
  std::shared_ptr<AllocatorStats::Registry> registry[kMaxStats];
  ~ShardOwner() {
    for (int i = 0; i < kMaxStats; ++i) {
      if (t_shard[i]) registry[i]->retire(t_shard[i]);
      t_shard[i] = nullptr;
    }
  }
};

}  // namespace

AllocatorStats::AllocatorStats()
    : registry_(std::make_shared<Registry>()), index_(next_index.fetch_add(1)) {
  if (index_ >= kMaxStats) index_ = -1;  // every update goes to the shared balance
}

// The slow path of an update: the thread's first, or one without a shard.
AllocatorStats::Shard* AllocatorStats::my_shard() {
  ShardOwner* owner = index_ < 0 ? nullptr : thread_cache<ShardOwner>();
  if (!owner || owner->registry[index_]) return nullptr;  // ending, or the table was full
  owner->registry[index_] = registry_;
  return t_shard[index_] = registry_->take();
}

void AllocatorStats::add_without_shard(int64_t n) {
  if (my_shard()) {
    add(n);  // now through the new shard
  } else {
    registry_->shared.fetch_add(n, std::memory_order_relaxed);
  }
}

void AllocatorStats::raise_peak() {
  Registry& r = *registry_;
  r.raise_peak(r.total());
}

int64_t AllocatorStats::live_bytes() const { return registry_->total(); }

int64_t AllocatorStats::peak_bytes() const {
  return registry_->peak.load(std::memory_order_relaxed);
}

void AllocatorStats::reset_peak() {
  registry_->peak.store(registry_->total(), std::memory_order_relaxed);
}

}  // namespace ag
