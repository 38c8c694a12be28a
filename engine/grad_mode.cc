#include "engine/grad_mode.h"

namespace ag {

namespace {
thread_local bool enabled = true;
}

bool grad_enabled() { return enabled; }
void set_grad_enabled(bool e) { enabled = e; }

}  // namespace ag
