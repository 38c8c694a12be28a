#include "engine/tensor.h"

#include <gtest/gtest.h>

#include "engine/error.h"
#include "engine/memory/allocator.h"
#include "engine/node.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_values;
using testing::leaf;

TEST(Tensor, ShapeDtypeAndValues) {
  Tensor t = ops::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kFloat32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.size(-1), 3);
  EXPECT_TRUE(t.device().is_cpu());
  expect_values(t, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.describe(), "float32[2, 3]");
  EXPECT_THROW(t.size(2), Error);
  EXPECT_THROW(t.item(), Error);
}

// Note [Data block alignment]: data starts at a multiple of its size class (64 B .. 4 KiB), so
// same-sized arrays share their offset modulo 4096 and 4K aliasing cannot slow a kernel.
TEST(Tensor, DataIsAlignedToItsSizeClassUpToAPage) {
  const std::vector<std::pair<int64_t, uintptr_t>> floats_and_alignment = {
      {1, 64}, {16, 64}, {17, 128}, {200, 1024}, {1000, 4096}, {5000, 4096}, {100000, 4096}};
  for (const auto& [n, alignment] : floats_and_alignment) {
    std::vector<Tensor> several;  // fresh blocks, not only the one a cache hands back
    for (int i = 0; i < 3; ++i) several.push_back(Tensor::empty({n}));
    for (const Tensor& t : several) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % alignment, 0u) << n << " floats";
    }
  }
}

TEST(Tensor, Float64KeepsPrecision) {
  Tensor t = ops::from_vector({1.0 + 1e-12}, {1}, DType::kFloat64);
  EXPECT_EQ(t.item(), 1.0 + 1e-12);
}

TEST(Tensor, LeavesAndRequiresGrad) {
  Tensor x = leaf({1, 2}, {2});
  EXPECT_TRUE(x.is_leaf());
  EXPECT_TRUE(x.requires_grad());
  Tensor y = ops::mul(x, x);
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(y.grad_fn()->name(), "mul");
  EXPECT_EQ(y.output_nr(), 0u);
  EXPECT_THROW(y.set_requires_grad(false), Error);
}

TEST(Tensor, DetachSharesStorageAndVersion) {
  Tensor x = leaf({1, 2}, {2});
  Tensor d = x.detach();
  EXPECT_TRUE(d.is_leaf());
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.raw_data(), x.raw_data());
  const uint32_t before = x.version();
  ops::add_(d, ops::ones({2}, DType::kFloat64));
  EXPECT_EQ(x.version(), before + 1);
  expect_values(x, {2, 3});
}

TEST(Tensor, DetachInPlaceMakesALeafAndRefusesViews) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, x);
  const std::shared_ptr<Node> node = y.grad_fn();
  const void* data = y.raw_data();
  EXPECT_TRUE(y.detach_().is_same(y));
  EXPECT_TRUE(y.is_leaf());
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.output_nr(), 0u);
  EXPECT_EQ(y.raw_data(), data);
  EXPECT_EQ(y.version(), 0u);
  EXPECT_EQ(node.use_count(), 1);  // nothing but this test holds y's old history
  Tensor v = ops::slice(x, 0, 0, 1);
  EXPECT_THROW(v.detach_(), Error);
  EXPECT_TRUE(v.requires_grad());
  x.detach_();
  EXPECT_FALSE(x.requires_grad());
}

TEST(Allocator, ExactLiveAndPeakBytes) {
  const int64_t base = live_bytes();
  reset_peak_bytes();
  {
    Tensor a = Tensor::empty({10, 10}, DType::kFloat32);
    EXPECT_EQ(live_bytes(), base + 400);
    {
      Tensor b = Tensor::empty({5}, DType::kFloat64);
      EXPECT_EQ(live_bytes(), base + 440);
    }
    EXPECT_EQ(live_bytes(), base + 400);
    EXPECT_EQ(peak_bytes(), base + 440);
    reset_peak_bytes();
    EXPECT_EQ(peak_bytes(), base + 400);
  }
  EXPECT_EQ(live_bytes(), base);
}

TEST(Allocator, ViewsDoNotAllocate) {
  Tensor a = Tensor::empty({4, 4}, DType::kFloat32);
  const int64_t base = live_bytes();
  Tensor v = ops::reshape(a, {16});
  Tensor d = a.detach();
  EXPECT_EQ(live_bytes(), base);
  EXPECT_EQ(v.raw_data(), a.raw_data());
}

TEST(Allocator, NoAllocatorForMissingDevice) {
  if (find_allocator(DeviceType::kCUDA) != nullptr) GTEST_SKIP() << "CUDA allocator registered";
  EXPECT_THROW(Tensor::empty({2}, DType::kFloat32, Device{DeviceType::kCUDA, 0}), Error);
}

}  // namespace
}  // namespace ag
