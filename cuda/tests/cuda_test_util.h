// Helpers for the CUDA tests: skip without a GPU, make the same inputs on both devices, and
// compare a CUDA result with the CPU's.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda/cuda.h"
#include "engine/tensor.h"
#include "ops/ops.h"

namespace ag::cuda::testing {

inline const Device kCuda{DeviceType::kCUDA, 0};

// First statement of every test that needs a GPU. The message says why ("no CUDA device: ..."
// or "built without CUDA (...)").
#define AG_SKIP_WITHOUT_CUDA()                          \
  do {                                                  \
    if (!::ag::cuda::is_available()) {                  \
      GTEST_SKIP() << ::ag::cuda::unavailable_reason(); \
    }                                                   \
  } while (0)

// The same uniform values on the CPU and on the GPU.
struct Pair {
  Tensor cpu, gpu;
};
inline Pair random_pair(const Shape& shape, uint64_t seed, DType dtype = DType::kFloat32,
                        double low = -1, double high = 1) {
  Tensor cpu = ops::uniform(shape, low, high, seed, dtype);
  return {cpu, ops::to(cpu, kCuda)};
}

// Tolerances: float32 kernels may sum in another order (and use other exp/log/pow) than Eigen.
inline double default_tol(DType t) { return t == DType::kFloat32 ? 1e-5 : 1e-12; }

// Expects `gpu` (on CUDA) to match `cpu` elementwise: |g - c| <= tol * (1 + |c|).
inline void expect_close(const Tensor& gpu, const Tensor& cpu, double tol) {
  ASSERT_TRUE(gpu.defined());
  ASSERT_TRUE(cpu.defined());
  ASSERT_TRUE(gpu.device().is_cuda()) << gpu.describe();
  ASSERT_EQ(gpu.shape(), cpu.shape());
  ASSERT_EQ(gpu.dtype(), cpu.dtype());
  const std::vector<double> g = gpu.to_vector(), c = cpu.to_vector();
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool ok = std::abs(g[i] - c[i]) <= tol * (1 + std::abs(c[i])) ||
                    (std::isnan(g[i]) && std::isnan(c[i])) || g[i] == c[i];
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << "element " << i << " of " << cpu.describe() << ": cuda " << g[i]
                    << " vs cpu " << c[i];
    }
  }
  EXPECT_EQ(reported, 0) << "mismatching elements of " << cpu.describe();
}
inline void expect_close(const Tensor& gpu, const Tensor& cpu) {
  expect_close(gpu, cpu, default_tol(cpu.dtype()));
}

// Bitwise equality (dropout masks, copies).
inline void expect_equal(const Tensor& gpu, const Tensor& cpu) {
  ASSERT_EQ(gpu.shape(), cpu.shape());
  EXPECT_EQ(gpu.to_vector(), cpu.to_vector()) << cpu.describe();
}

}  // namespace ag::cuda::testing
