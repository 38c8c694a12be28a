// Seed 003's Dropout2d memory scenario (issue 16577, PR 16583), on the CPU allocator's exact
// byte counts: x [2,3,10,10] requires grad, m [1,3,1,1] does not.
//   z = x.sum();               base = live bytes
//   z = ((x + 2) * m).sum();   end  = live bytes
// mul's gradient for m needs (x + 2), but m does not require grad: with guarded saves nothing
// extra stays alive (end == base); without, (x + 2) is kept for a formula that can never run.
#pragma once

#include <cstdint>

#include "engine/options.h"

namespace ag::paper {

struct DropoutMemory {
  int64_t extra_live_bytes = 0;  // end - base
  int64_t bytes_saved = 0;       // saved for backward by the forward ops (engine counters)
};
DropoutMemory measure_dropout_memory(const EngineOptions& options);

// The same with the library's dropout2d (train mode, p = 0.5) in place of the explicit mask.
DropoutMemory measure_dropout2d_op_memory(const EngineOptions& options);

}  // namespace ag::paper
