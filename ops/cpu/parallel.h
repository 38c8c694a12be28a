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
// AG_NUM_THREADS says so (1 runs everything on the calling thread), or inside run_with_threads.
int parallel_threads();

// Runs fn on the calling thread with parallel_for limited to `threads` threads (the calling
// thread included; at most parallel_threads()), e.g. to time a workload on one core beside a
// multi-threaded run in the same process.
void run_with_threads(int threads, const std::function<void()>& fn);

}  // namespace ag::ops
