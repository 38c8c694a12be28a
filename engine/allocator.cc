#include "engine/allocator.h"

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
  void* allocate(size_t bytes) override {
    // malloc's 16-byte alignment is enough: the kernels map data as unaligned (views may start
    // anywhere), and glibc's malloc is much cheaper than aligned_alloc for small tensors.
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (!p) throw std::bad_alloc();
    stats().on_allocate(bytes);
    return p;
  }
  void deallocate(void* ptr, size_t bytes) override {
    std::free(ptr);
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
