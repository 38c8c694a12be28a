// What the CPU kernels need of the CPU, with no dependencies: //engine picks its kernels by it
// (ops/cpu/isa.h, Note [Kernel instruction sets]), and the benchmarks whose plain-Eigen baselines
// are compiled for one instruction set check it before they start (paper/isa_guard.cc).
#pragma once

namespace ag::ops {

enum class CpuIsa { kBaseline, kAvx2, kAvx512 };

// Whether this CPU can run code compiled for `isa` (engine/copts.bzl's flags for it). Static:
// each file keeps its own copy, so that a copy compiled with wider instructions (a benchmark
// built for AVX-512) can never stand in for the check that runs first.
static inline bool cpu_supports(CpuIsa isa) {
  __builtin_cpu_init();  // may run in a constructor, before the runtime reads the CPU model
  switch (isa) {
    case CpuIsa::kBaseline:
      return true;
    case CpuIsa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::kAvx512:
      return cpu_supports(CpuIsa::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512bw");
  }
  return false;
}

}  // namespace ag::ops
