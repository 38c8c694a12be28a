// The CUDA device allocator: a simple caching allocator with the same exact live/peak byte
// counters as the CPU allocator (engine/allocator.h).
//
// cudaMalloc and cudaFree are slow and cudaFree synchronizes the device, so freed blocks are
// kept in per-size free lists (sizes rounded up to 512 bytes) and handed out again for the
// same rounded size. The stats count the bytes tensors asked for, live or not, never the cache:
// live_bytes(kCUDA) is what tensors hold, as on the CPU. When cudaMalloc runs out of memory
// the cache is returned to the driver and the allocation retried once.
//
// All work is on one stream, so a block freed while a queued kernel still reads it is safe to
// reuse: whatever the next owner queues runs after that kernel.
//
// Note [Graph pools]
// A captured graph (graph.h) replays its kernels on the very addresses they had when captured, so
// the blocks it used must never go to anyone else while it lives: a tensor that got one later
// would be overwritten by the next replay. While a graph is captured, every block handed out is
// recorded in its pool, and a pool block that is freed, during the capture or after it, goes
// back to the pool's own free lists, where only that graph's capture can reuse it. When the
// graph is destroyed the pool's free blocks return to the cache, and blocks still held by tensors
// (the graph's outputs) return to it when those are freed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/memory/allocator.h"

namespace ag::cuda {

class CachingAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes) override;
  void deallocate(void* ptr, size_t bytes) override;
  void copy_from_host(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, const void* src, size_t bytes) override;
  void fill_zero(void* dst, size_t bytes) override;

  int64_t cached_bytes() const;
  void empty_cache();

  // Graph pools (Note [Graph pools]): blocks handed out between begin_pool and end_pool belong
  // to the pool, until release_pool.
  struct Pool;
  Pool* begin_pool();
  void end_pool();
  void release_pool(Pool* pool);
  // Bytes in the pool's blocks, held or free (for tests).
  int64_t pool_bytes(const Pool* pool) const;

  static size_t round_up(size_t bytes) {
    return bytes == 0 ? kGranule : (bytes + kGranule - 1) / kGranule * kGranule;
  }

 private:
  static constexpr size_t kGranule = 512;
  void* take_cached(size_t rounded);
  // Records a block handed out while a graph is captured as that graph's (mutex_ held).
  void join_capturing_pool(void* p, size_t rounded);

  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_blocks_;  // by rounded size
  size_t cached_ = 0;
  Pool* capturing_ = nullptr;                 // the pool new blocks go to, if any
  std::unordered_map<void*, Pool*> pool_of_;  // every pool block's pool
};

// The process-wide instance (never destroyed: tensors may be freed during static destruction).
CachingAllocator& caching_allocator();

}  // namespace ag::cuda
