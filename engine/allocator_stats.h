#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace ag {

// Note [Per-thread byte accounting]
// Every Storage allocation and free updates its device's live-byte count, and tests assert on
// those counts exactly. A shared atomic counter would make that a locked read-modify-write on
// every op; on x86 it also waits for the kernel's output stores to drain first, which cost about
// 10 ns of a 1000-element add. So each thread keeps its own running balance (a shard that only
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

  void on_allocate(size_t bytes);
  void on_free(size_t bytes);
  int64_t live_bytes() const;
  int64_t peak_bytes() const;
  // Sets the peak to the current live bytes, so a later peak_bytes() measures one region.
  void reset_peak();

  struct Shard;
  struct Registry;

 private:
  void add(int64_t bytes);  // to the calling thread's shard, or to the shared balance
  Shard* my_shard();

  // Shared with every thread that holds a shard of it: a thread may end (and retire its shard)
  // after this object is destroyed.
  std::shared_ptr<Registry> registry_;
  int index_;  // this object's slot in each thread's shard table
};

}  // namespace ag
