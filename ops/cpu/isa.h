// Which instruction set the CPU kernels use.
//
// Note [Kernel instruction sets]
// An optimized build must run on any x86-64 CPU, yet Eigen's kernels are twice as fast with
// AVX-512 as with SSE2, and the instruction set is chosen when Eigen is compiled. So
// ops/cpu/cpu_backend.cc is compiled once per instruction set (engine/BUILD, flags in
// engine/copts.bzl), each copy in a namespace of its own (ag::ops::cpu_<isa>, and Eigen renamed
// to Eigen_<isa> by a macro), and the first op picks the best copy this CPU runs: AVX-512 (F, VL,
// DQ, BW), else AVX2 with FMA, else the x86-64 baseline (SSE2). Everything else (the engine, the
// dispatch below) is compiled for the baseline.
//
// AG_CPU_ISA=baseline|avx2|avx512 in the environment forces a copy (tests run the kernels on each;
// a forced instruction set that this CPU or build lacks is an error at the first op).
// --define=ag_isa=avx2 leaves the AVX-512 copy out of the build.
//
// Linking several copies of one source is safe only if no function compiled with wider
// instructions can stand in for a baseline one, so the copies hold only raw-array kernels
// (ops/cpu/kernels.h) and define no symbol outside their namespaces, which
// //ops/tests:kernel_isa_symbols_test checks on the built objects. The tensor-level backend
// (ops/cpu/cpu_backend.cc) is compiled once, for the baseline, and calls the chosen table.
#pragma once

#include "ops/cpu/cpu_features.h"  // CpuIsa, cpu_supports(): whether this CPU runs `isa`'s kernels

namespace ag::ops {

class Backend;
struct CpuKernels;

const char* cpu_isa_name(CpuIsa isa);

// Whether this build has `isa`'s kernels.
bool cpu_isa_built(CpuIsa isa);

// The kernels compiled for `isa` (nullptr when this build has none), whatever the CPU.
const CpuKernels* cpu_kernels(CpuIsa isa);

// A CPU backend on `isa`'s kernels (nullptr when this build has none), whatever the CPU: tests
// compare instruction sets with it. cpu_backend() is cpu_backend_for(selected_cpu_isa()).
Backend* cpu_backend_for(CpuIsa isa);

// The instruction set of cpu_backend(): AG_CPU_ISA when set, else the best one this CPU supports
// and this build has. Throws ag::Error naming the variable for an unknown, unsupported or
// unbuilt one.
CpuIsa selected_cpu_isa();

}  // namespace ag::ops
