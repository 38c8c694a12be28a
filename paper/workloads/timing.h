// Small timing helpers shared by the paper's workloads. Timing lives only in paper/.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace ag::paper {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The reading of a POSIX clock, in seconds.
inline double clock_seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// CPU seconds this thread has used (user and system). On a shared machine a long run is
// descheduled while a short one is not, so wall time per unit of work grows with the run's length
// under load; CPU time does not.
inline double thread_cpu_seconds() { return clock_seconds(CLOCK_THREAD_CPUTIME_ID); }

// CPU seconds all of this process's threads have used. Over a parallel step, divided by its wall
// time: the cores the step got (2 on an idle 2-core machine; fewer when a neighbour takes some).
inline double process_cpu_seconds() { return clock_seconds(CLOCK_PROCESS_CPUTIME_ID); }

// The median of `v` (the mean of the two middle values for an even count); 0 for an empty vector.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The q-quantile of `v` (0 <= q <= 1), interpolating linearly between the two nearest ranks, as
// numpy's default does: quantile(v, 0.5) is the median. 0 for an empty vector.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t below = static_cast<size_t>(at);
  if (below + 1 >= v.size()) return v.back();
  return v[below] + (at - static_cast<double>(below)) * (v[below + 1] - v[below]);
}

// Keeps the compiler from discarding a computed value.
template <typename T>
inline void do_not_optimize(const T& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}

// Seconds per call of fn() (which returns a checksum), over `iters` calls.
template <typename Fn>
double seconds_per_call(int iters, Fn fn) {
  double checksum = 0;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < iters; ++i) checksum += fn();
  const double s = seconds_since(start);
  do_not_optimize(checksum);
  return s / iters;
}

// Note [A stretch of steps]
// reproduce's interleaved rounds time each contender over a stretch of steps run back to back
// for at least 0.2 s (one step where a step takes longer), and take the mean per step; the peers
// do the same (seconds_per_call_over in paper/peers/common.py). A single step is shorter than
// the rhythm of a busy load (bursty: 20 ms busy, 20 ms idle per thread) and starts after the
// pause that Note [Settle between contenders] puts before every contender, so timed alone it
// measures where it lands in that rhythm and how the scheduler treats threads that have just
// woken, not what back-to-back steps (a training loop) get done on a busy machine. Timed one
// step per round, beside the bursty load, ours ranged 15-36 ms from round to round on the ReLU
// step and PyTorch 2.15's 18-52 ms, and the ratio of the medians of 15 rounds came out 0.84x,
// 0.88x and 0.95x in three runs of the same build; 9 steps back to back per round gave 0.63x.
// 0.2 s is five periods of the bursty load.
constexpr double kStretchSeconds = 0.2;

// Seconds per call of fn() (which returns a checksum), over calls made back to back until
// `min_seconds` have passed (one call at least).
template <typename Fn>
double seconds_per_call_over(double min_seconds, Fn fn) {
  double checksum = 0;
  int calls = 0;
  const Clock::time_point start = Clock::now();
  double s = 0;
  do {
    checksum += fn();
    ++calls;
    s = seconds_since(start);
  } while (s < min_seconds);
  do_not_optimize(checksum);
  return s / calls;
}

// Runs each variant `reps` times, interleaved (v0, v1, ..., v0, v1, ...) so that slow drifts of
// the machine affect every variant alike, and returns each variant's median. Each variant returns
// the time of one repetition in whatever unit it likes.
inline std::vector<double> interleaved_medians(
    int reps, const std::vector<std::function<double()>>& variants) {
  std::vector<std::vector<double>> samples(variants.size());
  for (int r = 0; r < reps; ++r) {
    for (size_t v = 0; v < variants.size(); ++v) samples[v].push_back(variants[v]());
  }
  std::vector<double> medians;
  for (auto& s : samples) medians.push_back(median(s));
  return medians;
}

}  // namespace ag::paper
