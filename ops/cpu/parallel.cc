#include "ops/cpu/parallel.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "engine/error.h"

// Note [Parallel runtime]
// Kernels split large work over threads with oneTBB (Debian's libtbb), chosen over GCC's OpenMP
// (libgomp) and the hand-made spinning pool it replaced by measuring the CPU hessian both ways,
// interleaved, quiet and beside competing loads (paper/runtime_compare.py; figures in
// paper/results/cpu_runtime.md). Two properties matter on a machine where other programs' threads
// come and go:
// - A helper thread may be descheduled at any moment. Work is cut into several chunks per thread
//   (kChunksPerThread in cpu_backend.cc), and chunks are taken dynamically: the calling thread
//   takes whatever the others have not started, so a missing worker delays the step by at most
//   one chunk, never by a static half of it. An OpenMP team, even with schedule(dynamic), waits at
//   its closing barrier for every member, started or not; so did the old pool, which also split
//   products in halves.
// - Waiting threads back off and sleep instead of spinning, leaving the core to whoever needs
//   it, including the descheduled worker the caller is waiting for.
// What neither property buys: beside a neighbour that keeps one thread busy, Linux runs our two
// threads on one core and leaves the neighbour the other (2 runnable threads against 1 is not an
// imbalance its load balancer moves: moving one of ours would only swap it), so a step gets one
// core's work done, no more than a single thread would: the seed 001 table "One core each"
// measures the cores our step gets under each load. Beside the bursty load the second core is
// lost to the run queue, not to sleep: the worker spends most of its time runnable but waiting,
// and sampled placements often had both our threads queued on one CPU while the other idled in
// the neighbour's pause (Linux does not at once move a thread that has just run). Pinning the two
// threads to separate cores helps only a little, since the thread that shares its core with the
// neighbour is still descheduled mid-chunk and the join waits for it. The runtime does not pin:
// two processes pinning alike would share one core, and it would override the user's affinity.
// Falling back to the calling thread alone while the process gets about one core was tried too
// (measured over short windows of parallel regions): quiet unchanged, and no consistent change
// beside the loads, so it was not kept (paper/results/cpu_runtime.md has the figures).
// run_with_threads runs a call at fewer threads, in a oneTBB arena of that size.
// The OpenMP version stays buildable for that comparison (AG_PARALLEL_OPENMP, see
// paper/runtime_compare.py); it is not a supported configuration.
// Under ThreadSanitizer the chunks run on plain threads instead, taken from an atomic counter in
// the same way: Debian's libtbb is not instrumented, so TSan cannot see its hand-offs and would
// report every input a worker reads as a race. The kernels' own sharing is what TSan checks.

namespace ag::ops {
namespace {

// AG_NUM_THREADS caps oneTBB's threads for the whole process (the calling thread counts as one).
int configured_threads() {
  const int available = tbb::info::default_concurrency();
  const char* env = std::getenv("AG_NUM_THREADS");
  if (env == nullptr || *env == '\0') return available;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  AG_CHECK(*end == '\0' && n >= 1, "AG_NUM_THREADS=", env, ": expected a positive integer");
  return static_cast<int>(std::min<long>(n, available));
}

struct Runtime {
  int threads = configured_threads();
  tbb::global_control limit{tbb::global_control::max_allowed_parallelism,
                            static_cast<size_t>(threads)};
};

const Runtime& runtime() {
  static const Runtime r;
  return r;
}

}  // namespace

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t chunks = (n + grain - 1) / grain;
  const int threads = parallel_threads();
  if (chunks <= 1 || threads == 1) {
    if (n > 0) fn(0, n);
    return;
  }
  auto run_chunk = [&](int64_t c) { fn(c * grain, std::min(n, (c + 1) * grain)); };
#if defined(__SANITIZE_THREAD__)
  std::atomic<int64_t> next{0};
  auto drain = [&] {
    for (int64_t c = next++; c < chunks; c = next++) run_chunk(c);
  };
  std::vector<std::thread> helpers;
  for (int64_t t = 1; t < std::min<int64_t>(threads, chunks); ++t) {
    helpers.emplace_back(drain);
  }
  drain();
  for (std::thread& helper : helpers) helper.join();
#elif defined(AG_PARALLEL_OPENMP)
  // libgomp, for paper/runtime_compare.py only: the same chunks, handed out one at a time.
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t c = 0; c < chunks; ++c) run_chunk(c);
#else
  // One task per chunk (simple_partitioner, grain 1): chunk boundaries stay multiples of `grain`,
  // which the elementwise kernels rely on for alignment.
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, chunks, 1),
      [&](const tbb::blocked_range<int64_t>& r) {
        for (int64_t c = r.begin(); c < r.end(); ++c) run_chunk(c);
      },
      tbb::simple_partitioner());
#endif
}

// Inside run_with_threads the calling thread works in an arena of that many slots, and
// tbb::parallel_for spreads its tasks over that arena's threads only.
int parallel_threads() {
  const int configured = runtime().threads;  // first: it sets oneTBB's global limit
  return std::min(configured, tbb::this_task_arena::max_concurrency());
}

void run_with_threads(int threads, const std::function<void()>& fn) {
  AG_CHECK(threads >= 1, "run_with_threads: expected at least one thread, got ", threads);
  tbb::task_arena arena(std::min(threads, parallel_threads()));
  arena.execute(fn);
}

}  // namespace ag::ops
