#include "engine/allocator.h"

#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/error.h"

namespace ag {

void AllocatorStats::on_allocate(size_t bytes) {
  int64_t live = live_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed) +
                 static_cast<int64_t>(bytes);
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (live > peak && !peak_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void AllocatorStats::on_free(size_t bytes) {
  live_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
}

namespace {

class CpuAllocator final : public Allocator {
 public:
  static constexpr size_t kAlignment = 64;

  CpuAllocator() {
    // glibc serves blocks above 128 KiB with fresh mmaps, so every large activation or gradient
    // of a training step would be page-faulted in again. Keep them in the heap for reuse.
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
  }

  // Data is 64-byte aligned. Beyond speed this makes results reproducible: Eigen's vectorized
  // reductions start at the first aligned element, so the summation order (and the rounding)
  // of a buffer would otherwise depend on where malloc happened to put it. The aligned block is
  // carved out of a plain malloc (much cheaper than aligned_alloc for small tensors); the
  // malloc'ed pointer is kept just before it.
  void* allocate(size_t bytes) override {
    void* raw = std::malloc(bytes + kAlignment + sizeof(void*));
    if (!raw) throw std::bad_alloc();
    auto start = reinterpret_cast<uintptr_t>(raw) + sizeof(void*);
    void* aligned = reinterpret_cast<void*>((start + kAlignment - 1) & ~uintptr_t{kAlignment - 1});
    static_cast<void**>(aligned)[-1] = raw;
    stats().on_allocate(bytes);
    return aligned;
  }
  void deallocate(void* ptr, size_t bytes) override {
    std::free(static_cast<void**>(ptr)[-1]);
    stats().on_free(bytes);
  }
  void copy_from_host(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void fill_zero(void* dst, size_t bytes) override {
    if (bytes) std::memset(dst, 0, bytes);
  }
};

Allocator*& slot(DeviceType type) {
  static Allocator* allocators[kNumDeviceTypes] = {};
  return allocators[static_cast<int>(type)];
}

}  // namespace

Allocator* find_allocator(DeviceType type) {
  if (type == DeviceType::kCPU) {
    static CpuAllocator cpu;
    return &cpu;
  }
  return slot(type);
}

Allocator& allocator_for(DeviceType type) {
  Allocator* a = find_allocator(type);
  AG_CHECK(a != nullptr, "no allocator for device ", to_string(Device{type, 0}),
           ": this build has no support for it");
  return *a;
}

void register_allocator(DeviceType type, Allocator* allocator) { slot(type) = allocator; }

}  // namespace ag
