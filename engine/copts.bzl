"""Instruction-set flags for the CPU kernels, shared by //engine and the Eigen baselines."""

_AVX2 = [
    "-mavx2",
    "-mfma",
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
