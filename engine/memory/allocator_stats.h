#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace ag {

// Note [Per-thread byte accounting]
// Every Storage allocation and free updates its device's live-byte count, and tests assert on
// those counts exactly. A shared atomic counter would make that a locked read-modify-write on
// every op; on x86 it also waits for the kernel's output stores to drain first, a visible part
// of a small add. So each thread keeps its own running balance (a shard that only
// it writes, with plain loads and stores) and the live count is the sum of all shards plus the
// balance left by threads that have ended.
//
// What stays exact:
// - live_bytes() whenever no allocation is in flight (e.g. read by the thread that allocated, or
//   after joining the threads that did). A tensor freed on another thread than the one that
//   made it leaves one shard above and the other below; the sum is still exact.
// - peak_bytes() for any region in which allocations on different threads do not race (a
//   single-threaded step, the engine's backward on its calling thread): each allocation raises
//   the peak to the sum it sees after its own update. Allocations that race on two threads can
//   each miss the other's bytes, so the peak can then fall short by that overlap.
// Threads beyond the shard table, and frees while a thread is shutting down, update the shared
// balance with an atomic instead (Note [Thread caches]).
class AllocatorStats {
 public:
  AllocatorStats();
  AllocatorStats(const AllocatorStats&) = delete;
  AllocatorStats& operator=(const AllocatorStats&) = delete;

  // Inline: every tensor's creation and destruction comes here.
  void on_allocate(size_t bytes) {
    add(static_cast<int64_t>(bytes));
    raise_peak();
  }
  void on_free(size_t bytes) { add(-static_cast<int64_t>(bytes)); }
  int64_t live_bytes() const;
  int64_t peak_bytes() const;
  // Sets the peak to the current live bytes, so a later peak_bytes() measures one region.
  void reset_peak();

  // One thread's balance for one AllocatorStats: written only by that thread (a plain load and
  // store, no locked instruction), read by any thread that sums the shards. On its own cache
  // line so that two threads' updates do not contend.
  struct alignas(64) Shard {
    std::atomic<int64_t> live{0};
  };
  struct Registry;
  // AllocatorStats objects with shards: one per device type in use, plus a few made by tests.
  static constexpr int kMaxStats = 16;

 private:
  inline void add(int64_t bytes);
  void add_without_shard(int64_t bytes);  // the thread's first update, or one without a shard
  void raise_peak();                      // to the sum of all shards, if that is above it
  Shard* my_shard();

  // Shared with every thread that holds a shard of it: a thread may end (and retire its shard)
  // after this object is destroyed.
  std::shared_ptr<Registry> registry_;
  int index_;  // this object's slot in each thread's shard table, or -1 (no shards)
};

namespace detail {
// The calling thread's shard per AllocatorStats. A plain thread_local array (no constructor or
// destructor) so that an update is one TLS load; null until the thread's first update.
inline thread_local AllocatorStats::Shard* t_shard[AllocatorStats::kMaxStats] = {};
}  // namespace detail

inline void AllocatorStats::add(int64_t bytes) {
  Shard* s = index_ < 0 ? nullptr : detail::t_shard[index_];
  if (!s) return add_without_shard(bytes);
  s->live.store(s->live.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
}

}  // namespace ag
