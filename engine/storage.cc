#include "engine/storage.h"

#include "engine/allocator.h"

namespace ag {

Storage::Storage(size_t nbytes, Device device)
    : data_(allocator_for(device.type).allocate(nbytes)), nbytes_(nbytes), device_(device) {}

Storage::~Storage() { allocator_for(device_.type).deallocate(data_, nbytes_); }

}  // namespace ag
