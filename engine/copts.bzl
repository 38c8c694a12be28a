"""Instruction-set flags for the CPU kernels (see Note [Kernel instruction sets], ops/cpu/isa.h)."""

# Note [Kernel loop alignment]
# Loop heads start on 64-byte boundaries. On this project's CPUs a short vectorized loop (an
# elementwise kernel's is six instructions) that straddles a 64-byte boundary runs at about half
# speed: the same 1000-element add loop took 28 or 50 ns depending only on where the linker put
# it, and the plain-Eigen relu baseline of paper/ops_bench.cc took 52 or 69 ns between two builds
# that differed elsewhere. Aligned, both sides of every comparison run at their best. (A per-file
# `#pragma GCC optimize` would be narrower, but it stops GCC from inlining Eigen's small
# functions.)
_ALIGN = ["-falign-loops=64"]

# Note [Kernels round as their rules]
# GCC's default (-ffp-contract=fast) fuses a multiply and an add of a vectorized kernel into one
# FMA instruction where the instruction set has one, which rounds once instead of twice. The
# scalar rule that the same op runs on strided or broadcast operands (ops/scalar_rules.h, compiled
# for the baseline, which has no FMA) rounds twice. So a compound kind such as tanh_backward,
# a * (1 - b * b), gave other bits on a transposed gradient than on a contiguous one (an eager
# backward and a compiled one then differed in the last bit: compiled_gradients_props_test), and
# other bits on an AVX2 CPU than on a baseline one. Without contraction every copy of a kernel
# rounds each operation as written, as its rule does; Eigen's products keep their FMAs, which are
# explicit instructions rather than contractions.
_EXACT = ["-ffp-contract=off"]

_AVX2 = [
    "-mavx2",
    "-mfma",
]

# GCC 12 reports false "uninitialized" warnings inside its own AVX-512 intrinsics headers when
# Eigen inlines them.
_AVX512 = _AVX2 + [
    "-mavx512f",
    "-mavx512vl",
    "-mavx512dq",
    "-mavx512bw",
    "-Wno-maybe-uninitialized",
    "-Wno-uninitialized",
]

# Each instruction set the CPU kernels are compiled for, with its flags. ops/cpu/isa.cc checks the
# same CPU features before using a copy.
CPU_KERNEL_ISAS = {
    "baseline": _ALIGN + _EXACT,
    "avx2": _AVX2 + _ALIGN + _EXACT,
    "avx512": _AVX512 + _ALIGN + _EXACT,
}

def cpu_isa_copts():
    """Flags for code outside //engine that is compared against the kernels (paper/ops_bench's
    plain-Eigen baselines): in optimized builds, the kernels' best instruction set on this
    project's machine kind (AVX-512), or AVX2 with --define=ag_isa=avx2. Such a binary needs that
    instruction set, unlike //engine, which picks its kernels at run time."""
    return select({
        "//engine:opt_avx2": _AVX2 + _ALIGN + _EXACT,
        "//engine:opt": _AVX512 + _ALIGN + _EXACT,
        "//conditions:default": [],
    })
