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

  static size_t round_up(size_t bytes) {
    return bytes == 0 ? kGranule : (bytes + kGranule - 1) / kGranule * kGranule;
  }

 private:
  static constexpr size_t kGranule = 512;
  void* take_cached(size_t rounded);

  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_blocks_;  // by rounded size
  size_t cached_ = 0;
};

// The process-wide instance (never destroyed: tensors may be freed during static destruction).
CachingAllocator& caching_allocator();

}  // namespace ag::cuda
