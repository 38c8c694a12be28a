// For the tests run with AG_CPU_ISA set (cpu_kernels_forced_*_test): skips every test when this
// CPU (or build) cannot run the forced instruction set, instead of failing each at its first op,
// and otherwise checks, before any test, that the ops really run on the forced kernels.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "ops/backend.h"
#include "ops/cpu/isa.h"

namespace ag::ops {
namespace {

class ForcedIsaEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* forced = std::getenv("AG_CPU_ISA");
    ASSERT_NE(forced, nullptr) << "these tests are run with AG_CPU_ISA set (ops/tests/BUILD)";
    for (CpuIsa isa : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
      if (std::string(cpu_isa_name(isa)) != forced) continue;
      if (!cpu_supports(isa)) GTEST_SKIP() << "this CPU cannot run " << forced << " instructions";
      if (!cpu_isa_built(isa)) GTEST_SKIP() << "this build has no " << forced << " kernels";
      ASSERT_EQ(selected_cpu_isa(), isa);
      ASSERT_EQ(cpu_backend(), cpu_backend_for(isa));
      return;
    }
    FAIL() << "AG_CPU_ISA=" << forced << " names no instruction set";
  }
};

const ::testing::Environment* const kForcedIsa =
    ::testing::AddGlobalTestEnvironment(new ForcedIsaEnvironment);

}  // namespace
}  // namespace ag::ops
