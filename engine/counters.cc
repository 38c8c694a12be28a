#include "engine/counters.h"

namespace ag {

Counters& counters() {
  thread_local Counters c;
  return c;
}

void reset_counters() { counters() = Counters{}; }

}  // namespace ag
