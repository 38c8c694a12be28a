// Every CUDA kernel against the CPU kernel on the same inputs: elementwise ops with
// broadcasting, unary ops, copies and transposes, sums, log_softmax/cross_entropy, dropout.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda/tests/cuda_test_util.h"
#include "engine/autograd.h"
#include "engine/tensor.h"
#include "ops/backend.h"
#include "ops/checks.h"
#include "ops/ops.h"

namespace ag::cuda {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::kCuda;
using testing::Pair;
using testing::random_pair;

const DType kDTypes[] = {DType::kFloat32, DType::kFloat64};

struct ShapePair {
  Shape a, b;
};
// Same shapes, scalars, rows, columns, outer products, 4-D channel broadcasts, rank mismatch.
const ShapePair kBroadcasts[] = {
    {{3, 4}, {3, 4}},
    {{5}, {}},
    {{}, {5}},
    {{3, 4}, {4}},
    {{3, 1}, {1, 4}},
    {{2, 3, 10, 10}, {1, 3, 1, 1}},
    {{2, 3, 4, 5}, {3, 1, 5}},
    {{1, 3, 1}, {2, 1, 4}},
    {{257, 129}, {257, 129}},
};

// Every binary kind of the op list (Note [The op list], ops/kinds.h), through each backend.
TEST(CudaKernels, BinaryOpsWithBroadcasting) {
  AG_SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    uint64_t seed = 1;
    for (const ShapePair& s : kBroadcasts) {
      // Positive inputs keep div and pow finite.
      Pair a = random_pair(s.a, seed++, dtype, 0.5, 2.0);
      Pair b = random_pair(s.b, seed++, dtype, 0.5, 2.0);
      const Shape out = ops::broadcast_shapes("binary", a.cpu, b.cpu);
      for (ops::BinaryKind kind : ops::kAllBinaryKinds) {
        SCOPED_TRACE(std::string(ops::kind_name(kind)) + " " + to_string(s.a) + " with " +
                     to_string(s.b));
        expect_close(ops::backend_for(kCuda).binary(kind, a.gpu, b.gpu, out),
                     ops::backend_for(kCPU).binary(kind, a.cpu, b.cpu, out));
      }
    }
  }
}

TEST(CudaKernels, ThresholdBackward) {
  AG_SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    Pair grad = random_pair({33, 17}, 1, dtype, -2, 2);
    Pair result = random_pair({33, 17}, 2, dtype, -2, 2);
    expect_equal(ops::threshold_backward(grad.gpu, result.gpu),
                 ops::threshold_backward(grad.cpu, result.cpu));
  }
}

TEST(CudaKernels, InPlaceOpsBroadcastTheSecondArgument) {
  AG_SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    Pair a = random_pair({4, 6}, 1, dtype);
    Pair b = random_pair({6}, 2, dtype);
    Pair c = random_pair({4, 1}, 3, dtype);
    ops::add_(a.cpu, b.cpu);
    ops::add_(a.gpu, b.gpu);
    ops::mul_(a.cpu, c.cpu);
    ops::mul_(a.gpu, c.gpu);
    expect_close(a.gpu, a.cpu);
    ops::copy_(a.cpu, b.cpu);  // broadcast copy
    ops::copy_(a.gpu, b.gpu);
    expect_equal(a.gpu, a.cpu);
  }
}

TEST(CudaKernels, EveryUnaryKind) {
  AG_SKIP_WITHOUT_CUDA();
  using ops::UnaryKind;
  for (DType dtype : kDTypes) {
    Pair signed_x = random_pair({33, 17}, 4, dtype, -2, 2);
    Pair positive = random_pair({33, 17}, 5, dtype, 0.1, 3);
    for (UnaryKind kind : ops::kAllUnaryKinds) {
      const bool needs_positive = kind == UnaryKind::kLog || kind == UnaryKind::kPowScalar;
      const Pair& x = needs_positive ? positive : signed_x;
      SCOPED_TRACE(ops::kind_name(kind));
      expect_close(ops::backend_for(kCuda).unary(kind, x.gpu, 1.7),
                   ops::backend_for(kCPU).unary(kind, x.cpu, 1.7));
    }
  }
}

TEST(CudaKernels, FillCopyBroadcastTranspose) {
  AG_SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    expect_equal(ops::full({3, 5}, 2.5, dtype, kCuda), ops::full({3, 5}, 2.5, dtype));
    Pair a = random_pair({3, 1, 5}, 6, dtype);
    expect_equal(ops::broadcast_to(a.gpu, {2, 3, 4, 5}), ops::broadcast_to(a.cpu, {2, 3, 4, 5}));
    expect_equal(ops::clone(a.gpu), ops::clone(a.cpu));
    Pair b = random_pair({4, 5, 6}, 7, dtype);
    for (auto [d0, d1] : {std::pair{0, 1}, {0, 2}, {1, 2}, {-1, -2}}) {
      expect_equal(ops::transpose(b.gpu, d0, d1), ops::transpose(b.cpu, d0, d1));
    }
    Pair big = random_pair({300, 257}, 8, dtype);
    expect_equal(ops::transpose(big.gpu, 0, 1), ops::transpose(big.cpu, 0, 1));
  }
}

TEST(CudaKernels, SumAll) {
  AG_SKIP_WITHOUT_CUDA();
  // 1 element, one block, and the two-pass path (many blocks).
  for (int64_t n : {1, 1000, 1 << 20}) {
    Pair a = random_pair({n}, 9, DType::kFloat64);
    expect_close(ops::sum(a.gpu), ops::sum(a.cpu), 1e-12);
    Pair f = random_pair({n}, 10, DType::kFloat32);
    expect_close(ops::sum(f.gpu), ops::sum(f.cpu), 1e-4);
  }
  expect_equal(ops::sum(ops::zeros({0}, DType::kFloat32, kCuda)), ops::sum(ops::zeros({0})));
}

TEST(CudaKernels, SumToEveryReductionPattern) {
  AG_SKIP_WITHOUT_CUDA();
  struct Case {
    Shape from, to;
  };
  const Case cases[] = {
      {{10000, 256}, {256}},           // bias gradients: column sums, two passes
      {{300, 3}, {3}},                 // narrow columns
      {{300, 3}, {300, 1}},            // row sums
      {{2, 3, 10, 10}, {1, 3, 1, 1}},  // reduce, keep, reduce
      {{4, 5, 6}, {5, 1}},             // leading dim dropped
      {{4, 5, 6}, {4, 1, 6}},          // keep, reduce, keep
      {{7, 1, 9}, {1, 1, 9}},
      {{5, 6}, {1, 1}},
  };
  for (DType dtype : kDTypes) {
    uint64_t seed = 20;
    for (const Case& c : cases) {
      SCOPED_TRACE(to_string(c.from) + " -> " + to_string(c.to));
      Pair a = random_pair(c.from, seed++, dtype);
      expect_close(ops::sum_to(a.gpu, c.to), ops::sum_to(a.cpu, c.to),
                   dtype == DType::kFloat32 ? 1e-4 : 1e-12);
    }
    Pair b = random_pair({4, 5, 6}, seed++, dtype);
    for (int dim : {0, 1, 2, -1}) {
      for (bool keepdim : {false, true}) {
        expect_close(ops::sum(b.gpu, dim, keepdim), ops::sum(b.cpu, dim, keepdim));
        expect_close(ops::mean(b.gpu, dim, keepdim), ops::mean(b.cpu, dim, keepdim));
      }
    }
  }
}

TEST(CudaKernels, LogSoftmaxAndCrossEntropy) {
  AG_SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    Pair a = random_pair({7, 5}, 30, dtype, -4, 4);
    expect_close(ops::log_softmax(a.gpu, 1), ops::log_softmax(a.cpu, 1));
    expect_close(ops::log_softmax(a.gpu, 0), ops::log_softmax(a.cpu, 0));
    Pair b = random_pair({2, 3, 4}, 31, dtype, -4, 4);
    expect_close(ops::log_softmax(b.gpu, 1), ops::log_softmax(b.cpu, 1));

    // Forward and backward of the loss, through nll's gradient pattern.
    Pair logits = random_pair({300, 3}, 32, dtype, -2, 2);
    logits.cpu.set_requires_grad(true);
    logits.gpu = ops::detach(logits.gpu);
    logits.gpu.set_requires_grad(true);
    std::vector<int64_t> targets(300);
    for (size_t i = 0; i < targets.size(); ++i) targets[i] = static_cast<int64_t>((i * 7) % 3);
    Tensor loss_cpu = ops::cross_entropy(logits.cpu, targets);
    Tensor loss_gpu = ops::cross_entropy(logits.gpu, targets);
    expect_close(loss_gpu, loss_cpu);
    backward(loss_cpu);
    backward(loss_gpu);
    expect_close(logits.gpu.grad(), logits.cpu.grad());
  }
}

TEST(CudaKernels, DropoutMasksEqualTheCpuMasks) {
  AG_SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    Tensor ones_cpu = ops::ones({4, 6, 5, 5}, dtype);
    Tensor ones_gpu = ops::ones({4, 6, 5, 5}, dtype, kCuda);
    for (double p : {0.1, 0.5, 0.9}) {
      for (uint64_t seed : {1ull, 42ull}) {
        expect_equal(ops::dropout(ones_gpu, p, true, seed), ops::dropout(ones_cpu, p, true, seed));
        expect_equal(ops::dropout2d(ones_gpu, p, true, seed),
                     ops::dropout2d(ones_cpu, p, true, seed));
      }
    }
    expect_equal(ops::dropout(ones_gpu, 1.0, true, 3), ops::dropout(ones_cpu, 1.0, true, 3));
  }
}

// Note [Fused formula kernels]: the CUDA scaled product is one kernel with the bits of the three
// it fuses (the base class's composition), at sizes that end in every tail length.
TEST(CudaKernels, ScaledProductHasTheComposedBits) {
  AG_SKIP_WITHOUT_CUDA();
  ops::Backend& cuda = ops::backend_for(kCuda);
  for (DType dtype : kDTypes) {
    for (int64_t n : {1, 3, 4, 5, 7, 1000, 1027}) {
      SCOPED_TRACE(n);
      const Pair a = random_pair({n}, 1, dtype), b = random_pair({n}, 2, dtype),
                 c = random_pair({n}, 3, dtype);
      const Tensor fused = cuda.scaled_product(a.gpu, b.gpu, c.gpu, -2.0);
      expect_equal(fused, cuda.ops::Backend::scaled_product(a.gpu, b.gpu, c.gpu, -2.0));
      expect_close(fused, ops::backend_for(kCPU).scaled_product(a.cpu, b.cpu, c.cpu, -2.0));
    }
  }
}

// A view whose data starts one element into its storage is not 16-byte aligned: the contiguous
// kernels then take their one-element path (Note [Vectorized elementwise kernels]).
Tensor view_at(const Tensor& base, int64_t offset, int64_t n) {
  return Tensor(Ref<TensorImpl>::make(Shape{n}, base.dtype(), base.impl()->storage, offset));
}

TEST(CudaKernels, ContiguousKernelsOnViewsThatAreNotAligned) {
  AG_SKIP_WITHOUT_CUDA();
  for (DType dtype : kDTypes) {
    for (int64_t offset : {0, 1, 2, 3}) {
      SCOPED_TRACE(offset);
      // Views of 1028 elements at offsets 0 to 3 of 1031, ending in every tail length.
      const Pair a = random_pair({1031}, 4, dtype, 0.1, 2), b = random_pair({1031}, 5, dtype);
      const int64_t n = 1028 - offset;
      const Tensor a_gpu = view_at(a.gpu, offset, n), a_cpu = view_at(a.cpu, offset, n);
      const Tensor b_gpu = view_at(b.gpu, 3 - offset, n), b_cpu = view_at(b.cpu, 3 - offset, n);
      expect_close(ops::mul(a_gpu, b_gpu), ops::mul(a_cpu, b_cpu));
      expect_close(ops::log(a_gpu), ops::log(a_cpu));
      expect_close(ops::backend_for(kCuda).scaled_product(a_gpu, b_gpu, a_gpu, 3.0),
                   ops::backend_for(kCPU).scaled_product(a_cpu, b_cpu, a_cpu, 3.0));
      Tensor in_place = ops::clone(a_gpu);
      Tensor expected = ops::clone(a_cpu);
      ops::add_(in_place, b_gpu);
      ops::add_(expected, b_cpu);
      expect_close(in_place, expected);
    }
  }
}

}  // namespace
}  // namespace ag::cuda
