#pragma once

#include <cmath>
#include <cstdint>

#include "ops/host_device.h"

namespace ag::ops {

// A counter-based generator (SplitMix64 of seed and index): element i of a dropout mask depends
// only on (seed, i), so CPU and CUDA kernels draw the same masks and results are reproducible.
AG_HOST_DEVICE inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

AG_HOST_DEVICE inline double uniform_from_counter(uint64_t seed, uint64_t index) {
  return static_cast<double>(mix64(seed ^ mix64(index)) >> 11) * (1.0 / 9007199254740992.0);
}

// uniform_from_counter(seed, index) < keep_prob, decided on integers: the uniform is m * 2^-53
// for the integer m = mix >> 11 < 2^53, exact in a double, so it is below keep_prob exactly when
// m < keep_prob * 2^53 (exact as well: a scaling by a power of two), that is when
// m < keep_threshold(keep_prob) = ceil(keep_prob * 2^53). The same masks, without a conversion.
inline uint64_t keep_threshold(double keep_prob) {
  return static_cast<uint64_t>(std::ceil(keep_prob * 9007199254740992.0));
}
AG_HOST_DEVICE inline bool kept_by_counter(uint64_t seed, uint64_t index, uint64_t threshold) {
  return (mix64(seed ^ mix64(index)) >> 11) < threshold;
}

}  // namespace ag::ops
