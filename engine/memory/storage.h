#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "engine/device.h"
#include "engine/memory/allocator.h"
#include "engine/memory/object_pool.h"
#include "engine/memory/ref.h"

namespace ag {

// A device buffer plus the version counter shared by every tensor that views it (views, detach()).
// In-place ops bump the version; SavedVariable compares it at unpack time. Reference-counted in
// place and pooled, like TensorImpl (engine/tensor.h).
class Storage final : public RefCounted, public PooledObject<Storage> {
 public:
  // Inline, like the allocator lookup: every op output makes one.
  Storage(size_t nbytes, Device device)
      : allocator_(&allocator_of(device)),
        data_(allocator_->allocate(nbytes)),
        nbytes_(nbytes),
        device_(device) {}
  ~Storage() { allocator_->deallocate(data_, nbytes_); }

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  const Device& device() const { return device_; }

  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  // Allocators keep one set of counters per device type, so only device index 0 exists.
  static Allocator& allocator_of(const Device& device) {
    if (device.index != 0) fail_unsupported_index(device);
    return allocator_for(device.type);
  }
  [[noreturn]] static void fail_unsupported_index(const Device& device);

  Allocator* allocator_;  // the device's, looked up once
  void* data_;
  size_t nbytes_;
  Device device_;
  std::atomic<uint32_t> version_{0};
};

}  // namespace ag
