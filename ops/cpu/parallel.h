#pragma once

#include <cstdint>
#include <functional>

namespace ag::ops {

// Runs fn(begin, end) for the chunks [c * grain, min(n, (c + 1) * grain)) of [0, n), each once,
// on the calling thread and oneTBB's workers, and returns when all are done; with one thread (or
// one chunk), as a single call fn(0, n). Chunks are taken as threads come free, so a thread that
// the OS deschedules holds back at most the chunk it is in; see Note [Parallel runtime] in
// parallel.cc. Safe to call from several threads at once and from inside fn.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// How many threads parallel_for can use: the CPUs this process may run on, or fewer when
// AG_NUM_THREADS says so (1 runs everything on the calling thread).
int parallel_threads();

}  // namespace ag::ops
