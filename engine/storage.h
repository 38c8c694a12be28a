#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "engine/device.h"
#include "engine/object_pool.h"
#include "engine/ref.h"

namespace ag {

class Allocator;

// A device buffer plus the version counter shared by every tensor that views it (views, detach()).
// In-place ops bump the version; SavedVariable compares it at unpack time. Reference-counted in
// place and pooled, like TensorImpl (engine/tensor.h).
class Storage final : public RefCounted, public PooledObject<Storage> {
 public:
  Storage(size_t nbytes, Device device);
  ~Storage();

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  const Device& device() const { return device_; }

  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  Allocator* allocator_;  // the device's, looked up once
  void* data_;
  size_t nbytes_;
  Device device_;
  std::atomic<uint32_t> version_{0};
};

}  // namespace ag
