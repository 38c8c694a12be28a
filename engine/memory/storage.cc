#include "engine/memory/storage.h"

#include "engine/error.h"

namespace ag {

void Storage::fail_unsupported_index(const Device& device) {
  fail("unsupported device ", to_string(device),
       ": this build supports one device per type (index 0)");
}

}  // namespace ag
