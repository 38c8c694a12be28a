// Products with an operand of known zeros on CUDA (Note [Known zeros], cuda/zero_product.cu):
// written without multiplying, with exactly the values cuBLAS's multiplication gives, NaNs from
// Inf and NaN factors and the sign of zero included, for every transpose, with and without bias,
// batched; and the marks that ops keep.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cuda/tests/cuda_test_util.h"
#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/options.h"
#include "ops/backend.h"
#include "ops/ops.h"

namespace ag::cuda {
namespace {

using testing::kCuda;
using testing::random_pair;
using Zeros = Tensor::Zeros;

// Same values: both NaN, or equal with the same sign (+0 is not -0 here).
void expect_same_values(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<double> g = got.to_vector(), w = want.to_vector();
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool same = std::isnan(g[i]) ? std::isnan(w[i])
                                       : g[i] == w[i] && std::signbit(g[i]) == std::signbit(w[i]);
    if (!same && reported++ < 5) ADD_FAILURE() << "element " << i << ": " << g[i] << " vs " << w[i];
  }
  EXPECT_EQ(reported, 0);
}

// Writes `value` at flat index i of a CUDA tensor (through the host: tests only).
Tensor with_value_at(const Tensor& t, int64_t i, double value) {
  std::vector<double> v = t.to_vector();
  v[static_cast<size_t>(i)] = value;
  return ops::from_vector(v, t.shape(), t.dtype(), kCuda);
}

// op(A) op(B) (+ bias) on CUDA, multiplied by the GEMM when skip is false.
Tensor product(const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor* bias, bool skip) {
  OptionsGuard guard(EngineOptions().with_skip_zero_products(skip));
  return ops::backend_for(kCuda).matmul(a, b, ta, tb, bias);
}

// Sizes whose rows are whole 16-byte packs (the kernels' packed paths) and sizes that are not.
struct Sizes {
  int64_t m, k, n;
};

// op(A) op(B) (+ bias) with one operand zeros and the other holding negative values (their
// products with +0 are -0), an Inf and a NaN: written as the GEMM would write it.
void check_against_the_gemm(const Sizes& s, DType dtype, bool zero_first, bool ta, bool tb) {
  SCOPED_TRACE(std::string(zero_first ? "A" : "B") + " zeros" + (ta ? " A^T" : "") +
               (tb ? " B^T" : "") + " m=" + std::to_string(s.m));
  const Shape a_shape = ta ? Shape{s.k, s.m} : Shape{s.m, s.k};
  const Shape b_shape = tb ? Shape{s.n, s.k} : Shape{s.k, s.n};
  Tensor other = random_pair(zero_first ? b_shape : a_shape, 1, dtype, -2, -1).gpu;
  other = with_value_at(with_value_at(other, 5, std::numeric_limits<double>::infinity()), 300,
                        std::numeric_limits<double>::quiet_NaN());
  const Tensor zeros = ops::zeros(zero_first ? a_shape : b_shape, dtype, kCuda);
  ASSERT_EQ(zeros.known_zeros(), Zeros::kAll);
  const Tensor& a = zero_first ? zeros : other;
  const Tensor& b = zero_first ? other : zeros;
  const Tensor bias = with_value_at(random_pair({s.n}, 2, dtype).gpu, 3, -0.0);
  for (const Tensor* with_bias : {static_cast<const Tensor*>(nullptr), &bias}) {
    reset_counters();
    const Tensor written = product(a, b, ta, tb, with_bias, true);
    EXPECT_EQ(counters().products_of_known_zeros, 1);
    EXPECT_EQ(written.known_zeros(), with_bias ? Zeros::kUnknown : Zeros::kAllButNaN);
    const Tensor multiplied = product(a, b, ta, tb, with_bias, false);
    EXPECT_EQ(counters().products_of_known_zeros, 1);
    expect_same_values(written, multiplied);
  }
}

TEST(CudaZeroProduct, EqualsTheMultipliedProductWithInfAndNaN) {
  AG_SKIP_WITHOUT_CUDA();
  for (const Sizes& s : {Sizes{37, 21, 45}, Sizes{40, 24, 48}}) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      for (bool zero_first : {true, false}) {
        for (bool ta : {false, true}) {
          for (bool tb : {false, true}) check_against_the_gemm(s, dtype, zero_first, ta, tb);
        }
      }
    }
  }
}

// An operand of +0 and NaN (a product of zeros that met a NaN): its NaN rows reach the result.
TEST(CudaZeroProduct, AnOperandOfZerosAndNaNKeepsItsNaNs) {
  AG_SKIP_WITHOUT_CUDA();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (bool ta : {false, true}) {
    Tensor a = with_value_at(ops::zeros({20, 30}, DType::kFloat32, kCuda), 77, nan);
    a.mark_zeros(Zeros::kAllButNaN);
    const Tensor b = random_pair({ta ? 20 : 30, 9}, 3).gpu;
    expect_same_values(product(a, b, ta, false, nullptr, true),
                       product(a, b, ta, false, nullptr, false));
    // Both operands marked: A's NaN row, B not read.
    const Tensor zeros = ops::zeros({ta ? 20 : 30, 9}, DType::kFloat32, kCuda);
    expect_same_values(product(a, zeros, ta, false, nullptr, true),
                       product(a, zeros, ta, false, nullptr, false));
  }
}

TEST(CudaZeroProduct, BatchedProducts) {
  AG_SKIP_WITHOUT_CUDA();
  const Tensor zeros = ops::zeros({3, 8, 5}, DType::kFloat32, kCuda);
  const Tensor other =
      with_value_at(random_pair({3, 5, 6}, 4).gpu, 40, std::numeric_limits<double>::infinity());
  reset_counters();
  expect_same_values(ops::bmm(zeros, other), product(zeros, other, false, false, nullptr, false));
  EXPECT_EQ(counters().products_of_known_zeros, 1);
}

// The marks ops keep (Note [Known zeros]), and the write that drops them.
TEST(CudaZeroProduct, MarksFollowTheOps) {
  AG_SKIP_WITHOUT_CUDA();
  Tensor zeros = ops::zeros({4, 5}, DType::kFloat32, kCuda);
  const Tensor result = random_pair({4, 5}, 5).gpu;
  EXPECT_EQ(ops::zeros_like(result).known_zeros(), Zeros::kAll);
  EXPECT_EQ(ops::threshold_backward(zeros, result).known_zeros(), Zeros::kAll);
  EXPECT_EQ(ops::tanh_backward(zeros, result).known_zeros(), Zeros::kUnknown);
  EXPECT_EQ(ops::add(zeros, zeros).known_zeros(), Zeros::kAll);
  EXPECT_EQ(ops::add(zeros, result).known_zeros(), Zeros::kUnknown);
  EXPECT_EQ(ops::mul(zeros, result).known_zeros(), Zeros::kUnknown);  // 0 * Inf is NaN
  Tensor written = ops::zeros({4, 5}, DType::kFloat32, kCuda);
  ops::add_(written, result);
  EXPECT_EQ(written.known_zeros(), Zeros::kUnknown);
  for (double v : ops::threshold_backward(zeros, result).to_vector()) {
    ASSERT_EQ(v, 0.0);
    ASSERT_FALSE(std::signbit(v));
  }
}

}  // namespace
}  // namespace ag::cuda
