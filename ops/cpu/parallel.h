#pragma once

#include <cstdint>
#include <functional>

namespace ag::ops {

// Runs fn(i) for every i in [0, n), spread over the calling thread and a small process-wide pool
// (one worker per extra hardware thread), and returns when all are done. If the pool is busy
// (another thread's parallel_for, or a nested call), the caller simply runs every i itself, so
// this never blocks on other work and never deadlocks.
void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

// How many threads parallel_for can use (1 on a single-core machine).
int parallel_threads();

}  // namespace ag::ops
