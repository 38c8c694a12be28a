// ops/cpu/counter_rng.h's SplitMix64 counter RNG, callable from device code too: element i of
// a dropout mask depends only on (seed, i), so CUDA masks equal the CPU's bit for bit.
// (ops/ is plain C++; this copy adds the __host__ __device__ qualifiers.)
// cuda/tests/counter_rng_test.cc checks that both give the same numbers.
#pragma once

#include <cstdint>

#include "cuda/host_device.h"

namespace ag::cuda {

AG_HOST_DEVICE inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

AG_HOST_DEVICE inline double uniform_from_counter(uint64_t seed, uint64_t index) {
  return static_cast<double>(mix64(seed ^ mix64(index)) >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace ag::cuda
