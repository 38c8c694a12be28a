// Seed 003's Dropout2d regression on CUDA (regressions/dropout2d_memory_test.cc checks it on
// the CPU): x [2, 3, 10, 10] requires grad, m [1, 3, 1, 1] does not; (x + 2) * m must keep
// nothing extra alive, measured with the CUDA allocator's exact live bytes.
#include <gtest/gtest.h>

#include "cuda/tests/cuda_test_util.h"
#include "engine/autograd.h"
#include "engine/memory/allocator.h"
#include "engine/options.h"
#include "ops/ops.h"

namespace ag::cuda {
namespace {

using testing::expect_close;
using testing::kCuda;
constexpr DeviceType kDev = DeviceType::kCUDA;
constexpr int64_t kXPlus2Bytes = 2 * 3 * 10 * 10 * 4;  // float32

EngineOptions guards(bool on) {
  EngineOptions o;
  o.guard_saves = on;
  return o;
}

struct FreeUnneeded {
  Tensor x = ops::uniform({2, 3, 10, 10}, -1, 1, 1, DType::kFloat32, kCuda).set_requires_grad(true);
  Tensor m = ops::uniform({1, 3, 1, 1}, -1, 1, 2, DType::kFloat32, kCuda);
};

TEST(CudaDropout2dMemory, MaskMultiplyKeepsNothingExtra) {
  AG_SKIP_WITHOUT_CUDA();
  FreeUnneeded s;
  Tensor z = ops::sum(s.x);
  const int64_t base = live_bytes(kDev);
  z = ops::sum(ops::mul(ops::add(s.x, 2.0), s.m));
  EXPECT_EQ(live_bytes(kDev), base);
  backward(z);
  // d/dx sum((x + 2) * m) = m broadcast: the same on the CPU.
  Tensor x_cpu = ops::to(s.x, kCPU).detach().set_requires_grad(true);
  backward(ops::sum(ops::mul(ops::add(x_cpu, 2.0), ops::to(s.m, kCPU))));
  expect_close(s.x.grad(), x_cpu.grad());
}

// The "before": without the guards mul saves x + 2 for m's gradient, which nobody can ask for.
TEST(CudaDropout2dMemory, WithoutGuardsTheInputIsKeptAlive) {
  AG_SKIP_WITHOUT_CUDA();
  OptionsGuard before(guards(false));
  FreeUnneeded s;
  Tensor z = ops::sum(s.x);
  const int64_t base = live_bytes(kDev);
  z = ops::sum(ops::mul(ops::add(s.x, 2.0), s.m));
  EXPECT_EQ(live_bytes(kDev), base + kXPlus2Bytes);
}

TEST(CudaDropout2dMemory, Dropout2dKeepsOnlyItsMask) {
  AG_SKIP_WITHOUT_CUDA();
  FreeUnneeded s;
  const int64_t mask_bytes = 2 * 3 * 4;  // one float32 per (sample, channel)
  for (bool on : {true, false}) {
    OptionsGuard options(guards(on));
    Tensor z = ops::sum(s.x);
    const int64_t base = live_bytes(kDev);
    z = ops::sum(ops::dropout2d(ops::add(s.x, 2.0), 0.5, /*train=*/true, /*seed=*/7));
    EXPECT_EQ(live_bytes(kDev), base + mask_bytes + (on ? 0 : kXPlus2Bytes)) << "guards " << on;
  }
}

}  // namespace
}  // namespace ag::cuda
