#pragma once

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

}  // namespace ag::ops
