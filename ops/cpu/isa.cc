#include "ops/cpu/isa.h"

#include <cstdlib>
#include <string>

#include "engine/error.h"
#include "ops/cpu/kernels.h"

namespace ag::ops {

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kBaseline:
      return "baseline";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512:
      return "avx512";
  }
  return "?";
}

bool cpu_isa_built(CpuIsa isa) { return cpu_kernels(isa) != nullptr; }

const CpuKernels* cpu_kernels(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kBaseline:
      return &cpu_baseline::kernels();
    case CpuIsa::kAvx2:
      return &cpu_avx2::kernels();
    case CpuIsa::kAvx512:
#ifdef AG_CPU_NO_AVX512
      return nullptr;
#else
      return &cpu_avx512::kernels();
#endif
  }
  return nullptr;
}

CpuIsa selected_cpu_isa() {
  const CpuIsa all[] = {CpuIsa::kAvx512, CpuIsa::kAvx2, CpuIsa::kBaseline};
  const char* forced = std::getenv("AG_CPU_ISA");
  if (forced == nullptr || *forced == '\0') {
    for (CpuIsa isa : all) {
      if (cpu_supports(isa) && cpu_isa_built(isa)) return isa;
    }
    return CpuIsa::kBaseline;
  }
  for (CpuIsa isa : all) {
    if (forced != std::string(cpu_isa_name(isa))) continue;
    AG_CHECK(cpu_supports(isa), "AG_CPU_ISA=", forced, ": this CPU cannot run ", forced,
             " instructions");
    AG_CHECK(cpu_isa_built(isa), "AG_CPU_ISA=", forced,
             ": this build has no kernels for it (built with --define=ag_isa=avx2)");
    return isa;
  }
  fail("AG_CPU_ISA=", forced, ": unknown instruction set (expected baseline, avx2 or avx512)");
}

}  // namespace ag::ops
