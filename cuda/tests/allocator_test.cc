// The CUDA allocator's exact live/peak counters, device copies and device-mismatch errors.
#include "engine/memory/allocator.h"

#include <gtest/gtest.h>

#include <string>

#include "cuda/cuda.h"
#include "cuda/tests/cuda_test_util.h"
#include "engine/autograd.h"
#include "engine/error.h"
#include "ops/ops.h"

namespace ag::cuda {
namespace {

using testing::kCuda;
constexpr DeviceType kDev = DeviceType::kCUDA;

TEST(CudaAllocator, LiveAndPeakBytesAreExact) {
  AG_SKIP_WITHOUT_CUDA();
  const int64_t base = live_bytes(kDev);
  reset_peak_bytes(kDev);
  {
    Tensor a = Tensor::empty({1000}, DType::kFloat32, kCuda);
    EXPECT_EQ(live_bytes(kDev), base + 4000);
    {
      Tensor b = Tensor::empty({3, 5}, DType::kFloat64, kCuda);
      EXPECT_EQ(live_bytes(kDev), base + 4000 + 120);
    }
    EXPECT_EQ(live_bytes(kDev), base + 4000);
    EXPECT_EQ(peak_bytes(kDev), base + 4120);
  }
  EXPECT_EQ(live_bytes(kDev), base);
  EXPECT_EQ(peak_bytes(kDev), base + 4120);
  reset_peak_bytes(kDev);
  EXPECT_EQ(peak_bytes(kDev), base);
}

// Freed blocks are cached, not counted as live, and reused for the same rounded size.
TEST(CudaAllocator, CachesFreedBlocks) {
  AG_SKIP_WITHOUT_CUDA();
  empty_cache();
  EXPECT_EQ(cached_bytes(), 0);
  const int64_t base = live_bytes(kDev);
  void* first = nullptr;
  {
    Tensor a = Tensor::empty({1000}, DType::kFloat32, kCuda);
    first = a.raw_data();
  }
  EXPECT_EQ(live_bytes(kDev), base);
  EXPECT_EQ(cached_bytes(), 4096);  // 4000 rounded up to 512-byte granules
  Tensor again = Tensor::empty({999}, DType::kFloat32, kCuda);  // 3996 bytes: same granules
  EXPECT_EQ(again.raw_data(), first);
  EXPECT_EQ(cached_bytes(), 0);
  EXPECT_EQ(live_bytes(kDev), base + 3996);
}

TEST(CudaAllocator, CopiesRoundTripThroughTheDevice) {
  AG_SKIP_WITHOUT_CUDA();
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Tensor cpu = ops::uniform({4, 7}, -3, 3, /*seed=*/5, dtype);
    Tensor gpu = ops::to(cpu, kCuda);
    EXPECT_EQ(gpu.device(), kCuda);
    EXPECT_EQ(gpu.to_vector(), cpu.to_vector());
    Tensor back = ops::to(gpu, kCPU);
    EXPECT_TRUE(back.device().is_cpu());
    EXPECT_EQ(back.to_vector(), cpu.to_vector());
    // from_vector and zeros straight onto the device
    EXPECT_EQ(ops::from_vector({1, 2, 3}, {3}, dtype, kCuda).to_vector(),
              (std::vector<double>{1, 2, 3}));
    EXPECT_EQ(ops::zeros({2}, dtype, kCuda).to_vector(), (std::vector<double>{0, 0}));
  }
}

// to() is differentiable: the gradient goes back to the source device.
TEST(CudaAllocator, ToIsDifferentiable) {
  AG_SKIP_WITHOUT_CUDA();
  Tensor x = ops::uniform({3, 4}, -1, 1, 3, DType::kFloat64);
  x.set_requires_grad(true);
  Tensor y = ops::to(x, kCuda);
  Tensor loss = ops::sum(ops::mul(y, y));
  EXPECT_TRUE(loss.device().is_cuda());
  backward(loss);
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(x.grad().device().is_cpu());
  const std::vector<double> g = x.grad().to_vector(), v = x.to_vector();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(g[i], 2 * v[i], 1e-12);
}

void expect_mismatch(const char* op, void (*call)(const Tensor&, const Tensor&)) {
  Tensor cpu = ops::ones({2, 2});
  Tensor gpu = ops::ones({2, 2}, DType::kFloat32, kCuda);
  try {
    call(cpu, gpu);
    ADD_FAILURE() << op << ": expected a device-mismatch error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(op, 0), 0u) << what;  // the message starts with the op's name
    EXPECT_NE(what.find("cpu"), std::string::npos) << what;
    EXPECT_NE(what.find("cuda:0"), std::string::npos) << what;
  }
}

TEST(CudaAllocator, DeviceMismatchErrorsNameTheOpAndDevices) {
  AG_SKIP_WITHOUT_CUDA();
  expect_mismatch("add", [](const Tensor& a, const Tensor& b) { ops::add(a, b); });
  expect_mismatch("mul", [](const Tensor& a, const Tensor& b) { ops::mul(b, a); });
  expect_mismatch("mm", [](const Tensor& a, const Tensor& b) { ops::mm(a, b); });
  expect_mismatch("linear", [](const Tensor& a, const Tensor& b) { ops::linear(a, b); });
  expect_mismatch("matmul", [](const Tensor& a, const Tensor& b) { ops::matmul(a, b); });
  expect_mismatch("copy_", [](const Tensor& a, const Tensor& b) {
    Tensor dst = b;
    ops::copy_(dst, a);
  });
}

// Memory goes back to the counters when a graph is released.
TEST(CudaAllocator, BackwardReleasesSavedTensors) {
  AG_SKIP_WITHOUT_CUDA();
  Tensor w = ops::uniform({64, 32}, -1, 1, 1, DType::kFloat32, kCuda);
  w.set_requires_grad(true);
  Tensor x = ops::uniform({128, 32}, -1, 1, 2, DType::kFloat32, kCuda);
  const int64_t base = live_bytes(kDev);
  {
    Tensor loss = ops::sum(ops::relu(ops::linear(x, w)));
    backward(loss);
  }
  EXPECT_EQ(live_bytes(kDev), base + 64 * 32 * 4);  // only w.grad remains
}

}  // namespace
}  // namespace ag::cuda
