"""Instruction-set flags for the CPU kernels, shared by //engine and the Eigen baselines."""

# Note [Kernel loop alignment]
# Loop heads start on 64-byte boundaries. On this project's CPUs a short vectorized loop (an
# elementwise kernel's is six instructions) that straddles a 64-byte boundary runs at about half
# speed: the same 1000-element add loop took 28 or 50 ns depending only on where the linker put
# it, and the plain-Eigen relu baseline of paper/ops_bench.cc took 52 or 69 ns between two builds
# that differed elsewhere. Aligned, both sides of every comparison run at their best. (A per-file
# `#pragma GCC optimize` would be narrower, but it stops GCC from inlining Eigen's small
# functions.)
_AVX2 = [
    "-mavx2",
    "-mfma",
    "-falign-loops=64",
]

def cpu_isa_copts():
    """Flags by build mode.

    Optimized builds (-c opt: benchmarks, fuzzing) target this project's machine kind, whose CPUs
    have AVX-512; --define=ag_isa=avx2 builds for AVX2 machines (tools/build_gpu_bundle.sh does,
    for GPU hosts of unknown CPU). The default build stays portable. GCC 12 reports false
    "uninitialized" warnings inside its own AVX-512 intrinsics headers when Eigen inlines them.
    """
    return select({
        "//engine:opt_avx2": _AVX2,
        "//engine:opt": _AVX2 + [
            "-mavx512f",
            "-mavx512vl",
            "-mavx512dq",
            "-mavx512bw",
            "-Wno-maybe-uninitialized",
            "-Wno-uninitialized",
        ],
        "//conditions:default": [],
    })
