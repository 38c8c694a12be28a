// Note [Known zeros] (engine/memory/storage.h) on the CPU: which ops mark their results, the
// write that drops a mark, and CPU products with a marked operand (Note [Products with a zero
// operand]): written as zeros only when every factor is finite, with the values of the GEMM.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/grad_mode.h"
#include "engine/options.h"
#include "ops/backend.h"
#include "ops/ops.h"

namespace ag::ops {
namespace {

using Zeros = Tensor::Zeros;

TEST(KnownZeros, OpsThatKeepZerosMarkTheirResults) {
  const Tensor zeros = ops::zeros({4, 5});
  const Tensor result = ops::uniform({4, 5}, -1, 1, 1);
  EXPECT_EQ(zeros.known_zeros(), Zeros::kAll);
  EXPECT_EQ(ops::zeros_like(result).known_zeros(), Zeros::kAll);
  EXPECT_EQ(result.known_zeros(), Zeros::kUnknown);
  EXPECT_EQ(ops::full({4, 5}, 0.0).known_zeros(), Zeros::kUnknown);  // only zeros() marks
  // threshold_backward keeps the gradient or writes +0.
  const Tensor kept = ops::threshold_backward(zeros, result);
  EXPECT_EQ(kept.known_zeros(), Zeros::kAll);
  for (double v : kept.to_vector()) {
    ASSERT_EQ(v, 0.0);
    ASSERT_FALSE(std::signbit(v));
  }
  // tanh_backward and mul multiply: 0 * Inf would be NaN, so no mark.
  EXPECT_EQ(ops::tanh_backward(zeros, result).known_zeros(), Zeros::kUnknown);
  EXPECT_EQ(ops::mul(zeros, result).known_zeros(), Zeros::kUnknown);
  EXPECT_EQ(ops::add(zeros, zeros).known_zeros(), Zeros::kAll);
  EXPECT_EQ(ops::add(zeros, result).known_zeros(), Zeros::kUnknown);
  // A view shares the storage, and with it the mark.
  EXPECT_EQ(ops::reshape(zeros, {20}).known_zeros(), Zeros::kAll);
}

TEST(KnownZeros, AWriteDropsTheMarkAndASumOfZerosKeepsIt) {
  Tensor a = ops::zeros({3});
  const Tensor b = ops::zeros({3});
  ops::add_(a, b);  // zeros into zeros: still zeros, marked again after the write
  EXPECT_EQ(a.known_zeros(), Zeros::kAll);
  ops::add_(a, ops::ones({3}));
  EXPECT_EQ(a.known_zeros(), Zeros::kUnknown);
  EXPECT_EQ(a.to_vector(), std::vector<double>({1, 1, 1}));
  Tensor c = ops::zeros({3});
  ops::mul_(c, ops::ones({3}));
  EXPECT_EQ(c.known_zeros(), Zeros::kUnknown);
  Tensor d = ops::zeros({3});
  d.data<float>()[1] = 5;  // a raw write, announced as Tensor::data() asks
  d.bump_version();
  EXPECT_EQ(d.known_zeros(), Zeros::kUnknown);
}

// A product above the CPU's threshold for looking at zeros (1M multiply-adds).
struct Product {
  Tensor out;
  int64_t zeros, known_zeros;
};
Product product(const Tensor& a, const Tensor& b, const Tensor* bias, bool skip) {
  OptionsGuard guard(EngineOptions().with_skip_zero_products(skip));
  reset_counters();
  Tensor out = backend_for(kCPU).matmul(a, b, false, false, bias);
  return {out, counters().products_of_zeros, counters().products_of_known_zeros};
}

void expect_same_values(const Tensor& got, const Tensor& want) {
  const std::vector<double> g = got.to_vector(), w = want.to_vector();
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_TRUE(std::isnan(g[i]) ? std::isnan(w[i])
                                 : g[i] == w[i] && std::signbit(g[i]) == std::signbit(w[i]))
        << "element " << i << ": " << g[i] << " vs " << w[i];
  }
}

TEST(KnownZeros, CpuProductsWithAMarkedOperand) {
  const Tensor zeros = ops::zeros({128, 96});
  const Tensor other = ops::uniform({96, 100}, -2, -1, 2);  // products with +0 are -0
  const Tensor bias = ops::uniform({100}, -1, 1, 3);
  for (const Tensor* with_bias : {static_cast<const Tensor*>(nullptr), &bias}) {
    const Product written = product(zeros, other, with_bias, true);
    EXPECT_EQ(written.zeros, 1);
    EXPECT_EQ(written.known_zeros, 1);
    EXPECT_EQ(written.out.known_zeros(), with_bias ? Zeros::kUnknown : Zeros::kAll);
    const Product multiplied = product(zeros, other, with_bias, false);
    EXPECT_EQ(multiplied.zeros, 0);
    expect_same_values(written.out, multiplied.out);
  }
  // An Inf in the other operand reaches the product (0 * Inf = NaN): it is multiplied.
  std::vector<double> values = other.to_vector();
  values[7] = std::numeric_limits<double>::infinity();
  const Tensor with_inf = ops::from_vector(values, other.shape());
  const Product inf = product(zeros, with_inf, nullptr, true);
  EXPECT_EQ(inf.zeros, 0);
  EXPECT_EQ(inf.known_zeros, 0);
  expect_same_values(inf.out, product(zeros, with_inf, nullptr, false).out);
  // A NaN in an operand marked as +0 and NaN: multiplied too.
  std::vector<double> z(128 * 96, 0.0);
  z[5] = std::numeric_limits<double>::quiet_NaN();
  const Tensor zeros_and_nan = ops::from_vector(z, {128, 96});
  zeros_and_nan.mark_zeros(Zeros::kAllButNaN);
  const Product nan = product(zeros_and_nan, other, nullptr, true);
  EXPECT_EQ(nan.known_zeros, 0);
  expect_same_values(nan.out, product(zeros_and_nan, other, nullptr, false).out);
}

}  // namespace
}  // namespace ag::ops
