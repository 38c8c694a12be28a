// CPU kernels with a vector path of their own, against naive loops: threshold_backward's
// compare-and-mask functor (packets, tails and the parallel split, NaNs included), linear's
// product that starts from the bias rows instead of zeroing C first, the split fill, the
// elementwise kernels' aligned and unaligned maps, and binaries that broadcast without expanding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/grad_mode.h"
#include "ops/ops.h"

namespace ag::ops {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// result cycles through positive, zero, negative and NaN values; grad is NaN at every 7th element
// so that a NaN gradient meets every kind of result.
std::vector<double> threshold_results(int64_t n) {
  std::vector<double> r(n);
  const double pattern[4] = {0.5, 0.0, -0.25, kNaN};
  for (int64_t i = 0; i < n; ++i) r[i] = pattern[i % 4] * (i % 4 == 3 ? 1 : 1 + i % 5);
  return r;
}
std::vector<double> threshold_grads(int64_t n) {
  std::vector<double> g(n);
  for (int64_t i = 0; i < n; ++i) g[i] = i % 7 == 0 ? kNaN : 1.0 + static_cast<double>(i % 11);
  return g;
}

TEST(ThresholdBackwardKernel, MatchesTheScalarRuleForEverySizeAndDtype) {
  NoGradGuard no_grad;
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    // 1..40 cover a packet's tail for 4-, 8- and 16-lane registers; 1 << 17 takes the parallel
    // path.
    std::vector<int64_t> sizes;
    for (int64_t n = 1; n <= 40; ++n) sizes.push_back(n);
    sizes.push_back(int64_t{1} << 17);
    for (int64_t n : sizes) {
      const std::vector<double> r = threshold_results(n), g = threshold_grads(n);
      const std::vector<double> out =
          threshold_backward(from_vector(g, {n}, dtype), from_vector(r, {n}, dtype)).to_vector();
      ASSERT_EQ(out.size(), static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        // PyTorch's rule: the gradient where result > 0, else exactly 0 (also for a NaN result,
        // and also when the gradient there is NaN).
        if (r[i] > 0) {
          ASSERT_TRUE(std::isnan(g[i]) ? std::isnan(out[i]) : out[i] == g[i])
              << "n=" << n << " i=" << i;
        } else {
          ASSERT_EQ(out[i], 0.0) << "n=" << n << " i=" << i << " result=" << r[i];
          ASSERT_FALSE(std::signbit(out[i])) << "n=" << n << " i=" << i;
        }
      }
    }
  }
}

TEST(LinearKernel, BiasRowsPlusProductMatchNaiveLoops) {
  NoGradGuard no_grad;
  // Small (one thread) and large (split into row blocks) products.
  for (int64_t rows : {3, 1000}) {
    const int64_t in = 70, out = 90;
    Tensor x = uniform({rows, in}, -1, 1, 1, DType::kFloat64);
    Tensor w = uniform({out, in}, -1, 1, 2, DType::kFloat64);
    Tensor b = uniform({out}, -1, 1, 3, DType::kFloat64);
    const std::vector<double> vx = x.to_vector(), vw = w.to_vector(), vb = b.to_vector();
    const std::vector<double> with_bias = linear(x, w, b).to_vector();
    const std::vector<double> without = linear(x, w, Tensor()).to_vector();
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < out; ++j) {
        double dot = 0;
        for (int64_t p = 0; p < in; ++p) dot += vx[i * in + p] * vw[j * in + p];
        ASSERT_NEAR(without[i * out + j], dot, 1e-12) << rows << ": " << i << "," << j;
        ASSERT_NEAR(with_bias[i * out + j], dot + vb[j], 1e-12) << rows << ": " << i << "," << j;
      }
    }
  }
}

TEST(FillKernel, EveryElementOfASplitFillIsSet) {
  NoGradGuard no_grad;
  for (int64_t n : {int64_t{5}, (int64_t{1} << 17) + 3}) {
    const std::vector<double> v = full({n}, 2.5, DType::kFloat32).to_vector();
    ASSERT_EQ(v.size(), static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(v[i], 2.5) << "n=" << n << " i=" << i;
  }
}

// Elementwise kernels take aligned Eigen maps only when every pointer is 64-byte aligned; a view
// that starts one element into its storage must take the unaligned maps and still be right.
TEST(ElementwiseKernels, UnalignedDataTakesTheUnalignedPath) {
  NoGradGuard no_grad;
  for (int64_t n : {int64_t{1}, int64_t{15}, int64_t{40}, int64_t{1000}}) {
    std::vector<double> values(n + 1);
    for (int64_t i = 0; i <= n; ++i) values[i] = static_cast<double>(i) - 5.0;
    const Tensor base = from_vector(values, {n + 1}, DType::kFloat32);
    const Tensor shifted(Ref<TensorImpl>::make(Shape{n}, DType::kFloat32, base.impl()->storage, 1));
    ASSERT_NE(reinterpret_cast<uintptr_t>(shifted.raw_data()) % 64, 0u);
    const Tensor two = full({n}, 2.0);
    const std::vector<double> sum = add(shifted, two).to_vector();
    const std::vector<double> rectified = relu(shifted).to_vector();
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(sum[i], values[i + 1] + 2.0) << "n=" << n << " i=" << i;
      EXPECT_EQ(rectified[i], std::max(values[i + 1], 0.0)) << "n=" << n << " i=" << i;
    }
  }
}

// Inputs with as many elements as the result were not expanded by broadcasting (only size-1 dims
// differ), so the kernel runs them as flat arrays: values and the result's shape must match the
// broadcasting rule.
TEST(ElementwiseKernels, BroadcastWithoutExpansionRunsFlat) {
  NoGradGuard no_grad;
  const Tensor a = from_vector({1, 2, 3, 4, 5, 6}, {6}, DType::kFloat32);
  const Tensor b = from_vector({10, 20, 30, 40, 50, 60}, {1, 6}, DType::kFloat32);
  const Tensor c = from_vector({1, 1, 1, 1, 1, 1}, {1, 2, 1, 3}, DType::kFloat32);
  EXPECT_EQ(add(a, b).shape(), (Shape{1, 6}));
  EXPECT_EQ(add(a, b).to_vector(), (std::vector<double>{11, 22, 33, 44, 55, 66}));
  EXPECT_EQ(mul(b, a).to_vector(), (std::vector<double>{10, 40, 90, 160, 250, 360}));
  const Tensor d = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kFloat32);
  EXPECT_EQ(sub(d, c).shape(), (Shape{1, 2, 2, 3}));  // [2,3] against [1,2,1,3]: expanded
  EXPECT_EQ(sub(d, c).numel(), 12);
  const Tensor e = from_vector({1, 2, 3, 4, 5, 6}, {1, 2, 1, 3}, DType::kFloat32);
  EXPECT_EQ(sub(e, c).to_vector(), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace ag::ops
