// The benchmarks that set the engine's kernels beside plain Eigen (ops_bench, gemm_libs_bench)
// compile that Eigen for the kernels' best instruction set (cpu_isa_copts(), engine/copts.bzl), so
// unlike //engine, which picks its kernels at run time (Note [Kernel instruction sets],
// ops/cpu/isa.h), they need it: on a CPU without it they would die of an illegal instruction
// somewhere inside Eigen. This check runs before any other code of the program (a constructor of
// the first priority, compiled for the baseline) and says how to build one for this CPU.
#include <errno.h>  // program_invocation_short_name (GNU)

#include <cstdio>
#include <cstdlib>

#include "ops/cpu/cpu_features.h"

namespace {

using ag::ops::cpu_supports;
using ag::ops::CpuIsa;

[[gnu::constructor(101)]] void require_the_instruction_set_built_for() {
#if AG_BENCH_ISA == 512
  const bool supported = cpu_supports(CpuIsa::kAvx512);
  const char* built_for = "AVX-512 (F, VL, DQ, BW), the default of -c opt";
#elif AG_BENCH_ISA == 2
  const bool supported = cpu_supports(CpuIsa::kAvx2);
  const char* built_for = "AVX2 with FMA (--define=ag_isa=avx2)";
#else
  const bool supported = true;  // not optimized: the baseline
  const char* built_for = "";
#endif
  if (supported) return;
  std::fprintf(stderr,
               "%s: this build's plain-Eigen baselines need %s, which this CPU lacks; build "
               "with%s -c opt --define=ag_isa=avx2, or without -c opt\n",
               program_invocation_short_name, built_for,
               cpu_supports(CpuIsa::kAvx2) ? "" : " (AVX2 absent too)");
  std::_Exit(2);
}

}  // namespace
