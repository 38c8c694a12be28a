// What works without a GPU too: availability is reported without aborting, the device RNG is
// the CPU's, cuBLAS resolves, and CUDA tensors fail with a clear error when there is no device.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "cuda/cuda.h"
#include "cuda/tests/cuda_test_util.h"
#include "engine/error.h"
#include "ops/ops.h"

namespace ag::cuda {
namespace {

using testing::kCuda;

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

TEST(CudaRuntime, AvailabilityIsReportedWithAReason) {
  EXPECT_EQ(is_available(), device_count() > 0);
  if (is_available()) {
    EXPECT_TRUE(built_with_cuda());
    EXPECT_EQ(unavailable_reason(), "");
    EXPECT_NE(describe_device().find("matmul"), std::string::npos) << describe_device();
  } else if (built_with_cuda()) {
    EXPECT_TRUE(starts_with(unavailable_reason(), "no ")) << unavailable_reason();
  } else {
    EXPECT_TRUE(starts_with(unavailable_reason(), "built without CUDA")) << unavailable_reason();
  }
  synchronize();  // a no-op without a device; never aborts
}

// cuBLAS is loaded at run time; when the library is found, every entry point must resolve.
TEST(CudaRuntime, CublasResolvesWhenFound) {
  if (!built_with_cuda()) GTEST_SKIP() << unavailable_reason();
  const std::string status = cublas_status();
  RecordProperty("cublas", status);
  std::printf("cuBLAS: %s\n", status.c_str());
  if (cublas_loaded()) {
    EXPECT_TRUE(starts_with(status, "cuBLAS ")) << status;
  } else {
    EXPECT_NE(status.find("not found"), std::string::npos) << status;
  }
}

TEST(CudaRuntime, CudaTensorsWithoutADeviceThrow) {
  if (is_available()) GTEST_SKIP() << "a CUDA device is present";
  try {
    ops::zeros({2, 3}, DType::kFloat32, kCuda);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    if (built_with_cuda()) {
      EXPECT_NE(what.find("CUDA"), std::string::npos) << what;
    } else {
      EXPECT_NE(what.find("cuda:0"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace ag::cuda
