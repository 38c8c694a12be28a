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

  // Note [Known zeros]
  // Second derivatives through ReLU push tensors of zeros through the graph (Note [Products with
  // a zero operand], ops/cpu/zero_operand.h), and some are zeros by construction: zeros() and
  // zeros_like() (threshold_backward's derivative with respect to relu's result is one). Such a
  // storage carries a mark, so that a kernel can tell without reading it: the CUDA backend, which
  // could only read a value by waiting for the device, writes a product with such an operand
  // instead of multiplying. Two marks:
  //   kAll        every element is +0 (every byte is zero), as zeros() writes it;
  //   kAllButNaN  every element is +0 or NaN: what a product with a kAll operand gives, since the
  //               other operand's Inf and NaN reach the result (0 * Inf = NaN).
  // Ops keep marks where the values follow from the inputs' marks alone: threshold_backward of a
  // marked gradient (result > 0 ? grad : +0), the sum of two marked tensors, a product with a
  // marked operand and no bias. A mark holds for the version it was set at: every write into an
  // existing tensor bumps the version (ops/inplace.cc), which drops it.
  enum class Zeros : uint8_t { kUnknown, kAll, kAllButNaN };
  // The mark of a + b for marked a and b (+0 + +0 = +0; NaN + x = NaN).
  static Zeros sum_of(Zeros a, Zeros b) {
    if (a == Zeros::kUnknown || b == Zeros::kUnknown) return Zeros::kUnknown;
    return a == Zeros::kAll && b == Zeros::kAll ? Zeros::kAll : Zeros::kAllButNaN;
  }
  void mark_zeros(Zeros zeros) {
    marked_.store((uint64_t{version()} + 1) << 2 | static_cast<uint64_t>(zeros),
                  std::memory_order_relaxed);
  }
  Zeros known_zeros() const {
    const uint64_t marked = marked_.load(std::memory_order_relaxed);
    return (marked >> 2) == uint64_t{version()} + 1 ? static_cast<Zeros>(marked & 3)
                                                    : Zeros::kUnknown;
  }

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
  std::atomic<uint64_t> marked_{0};  // (version + 1) << 2 | Zeros, or 0 (Note [Known zeros])
};

}  // namespace ag
