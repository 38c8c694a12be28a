#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/device.h"
#include "engine/memory/allocator_stats.h"
#include "engine/memory/device_table.h"

namespace ag {

// Exact byte accounting per device (Note [Per-thread byte accounting]). Tests assert on these
// numbers (Dropout2d's "no extra memory" is checked this way on the CPU, without a GPU), so every
// Storage goes through an Allocator.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr, size_t bytes) = 0;
  // Copies between two buffers of this allocator's device, or from/to host memory.
  virtual void copy_from_host(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes) = 0;
  virtual void fill_zero(void* dst, size_t bytes) = 0;
  AllocatorStats& stats() { return stats_; }

 private:
  AllocatorStats stats_;
};

// The allocator for a device type, or null; the CPU one always exists, others are registered by
// their backend (cuda/ registers the CUDA one at static-initialization time).
Allocator* cpu_allocator();
namespace detail {
inline DeviceTable<Allocator> allocators;
}  // namespace detail
inline Allocator* find_allocator(DeviceType type) {
  return detail::allocators.find(type, &cpu_allocator);
}
[[noreturn]] void fail_no_allocator(DeviceType type);
inline Allocator& allocator_for(DeviceType type) {
  Allocator* a = find_allocator(type);
  if (!a) fail_no_allocator(type);
  return *a;
}
void register_allocator(DeviceType type, Allocator* allocator);

// A CPU block for a kernel's own scratch space (a product's packed operand), aligned as data
// blocks are (Note [Data block alignment], allocator.cc) but outside the byte accounting, which
// counts tensors. Throws std::bad_alloc when memory runs out.
struct ScratchFree {
  void operator()(void* block) const;
};
template <typename T>
using ScratchBlock = std::unique_ptr<T[], ScratchFree>;
void* new_scratch_block(size_t bytes);
template <typename T>
ScratchBlock<T> scratch_block(size_t count) {
  return ScratchBlock<T>(static_cast<T*>(new_scratch_block(sizeof(T) * count)));
}

inline int64_t live_bytes(DeviceType type = DeviceType::kCPU) {
  return allocator_for(type).stats().live_bytes();
}
inline int64_t peak_bytes(DeviceType type = DeviceType::kCPU) {
  return allocator_for(type).stats().peak_bytes();
}
inline void reset_peak_bytes(DeviceType type = DeviceType::kCPU) {
  allocator_for(type).stats().reset_peak();
}

}  // namespace ag
