#include "engine/storage.h"

#include "engine/allocator.h"
#include "engine/error.h"

namespace ag {

namespace {
// Allocators keep one set of counters per device type, so only device index 0 exists.
Allocator& allocator_of(const Device& device) {
  AG_CHECK(device.index == 0, "unsupported device ", to_string(device),
           ": this build supports one device per type (index 0)");
  return allocator_for(device.type);
}
}  // namespace

Storage::Storage(size_t nbytes, Device device)
    : allocator_(&allocator_of(device)),
      data_(allocator_->allocate(nbytes)),
      nbytes_(nbytes),
      device_(device) {}

Storage::~Storage() { allocator_->deallocate(data_, nbytes_); }

}  // namespace ag
