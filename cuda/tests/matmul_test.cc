// mm/addmm/linear/bmm/matmul on CUDA against the CPU, on both GEMM paths (cuBLAS when it
// loads, and the builtin kernel), with every transpose combination, in float32 and float64.
#include <gtest/gtest.h>

#include <vector>

#include "cuda/cuda.h"
#include "cuda/tests/cuda_test_util.h"
#include "engine/autograd.h"
#include "ops/backend.h"
#include "ops/ops.h"

namespace ag::cuda {
namespace {

using testing::expect_close;
using testing::kCuda;
using testing::Pair;
using testing::random_pair;

// The GEMM paths to test: the builtin one always, cuBLAS when it loads.
std::vector<GemmBackend> gemm_paths() {
  std::vector<GemmBackend> paths = {GemmBackend::kBuiltin};
  if (cublas_loaded()) paths.push_back(GemmBackend::kCublas);
  return paths;
}

// Selects a GEMM path for one scope and restores the previous one.
class GemmPath {
 public:
  explicit GemmPath(GemmBackend path) : previous_(gemm_backend()) { set_gemm_backend(path); }
  ~GemmPath() { set_gemm_backend(previous_); }

 private:
  GemmBackend previous_;
};

const char* name(GemmBackend b) { return b == GemmBackend::kCublas ? "cuBLAS" : "builtin"; }

// float32 products of length k differ from Eigen's by rounding only: well under this.
double tol(DType t) { return t == DType::kFloat32 ? 2e-5 : 1e-12; }

TEST(CudaMatmul, EveryTransposeCombinationAndBias) {
  AG_SKIP_WITHOUT_CUDA();
  // Sizes off the 64-wide tiles, and a bias.
  const int64_t m = 67, k = 130, n = 45;
  for (GemmBackend path : gemm_paths()) {
    GemmPath use(path);
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          SCOPED_TRACE(std::string(name(path)) + (ta ? " A^T" : " A") + (tb ? " B^T" : " B"));
          Pair a = random_pair(ta ? Shape{k, m} : Shape{m, k}, 1, dtype);
          Pair b = random_pair(tb ? Shape{n, k} : Shape{k, n}, 2, dtype);
          Pair bias = random_pair({n}, 3, dtype);
          for (bool with_bias : {false, true}) {
            expect_close(ops::backend_for(kCuda).matmul(a.gpu, b.gpu, ta, tb,
                                                        with_bias ? &bias.gpu : nullptr),
                         ops::backend_for(kCPU).matmul(a.cpu, b.cpu, ta, tb,
                                                       with_bias ? &bias.cpu : nullptr),
                         tol(dtype));
          }
        }
      }
    }
  }
}

TEST(CudaMatmul, OpsAndTheirGradients) {
  AG_SKIP_WITHOUT_CUDA();
  for (GemmBackend path : gemm_paths()) {
    GemmPath use(path);
    SCOPED_TRACE(name(path));
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      Pair x = random_pair({100, 16}, 4, dtype);
      Pair w = random_pair({33, 16}, 5, dtype);
      Pair bias = random_pair({33}, 6, dtype);
      Pair a3 = random_pair({3, 20, 7}, 7, dtype);
      Pair b3 = random_pair({3, 7, 9}, 8, dtype);
      Pair full_bias = random_pair({100, 33}, 9, dtype);
      for (Pair* p : {&x, &w, &bias, &a3, &b3, &full_bias}) {
        p->cpu.set_requires_grad(true);
        p->gpu.set_requires_grad(true);
      }
      auto run = [&](bool gpu) {
        auto pick = [&](const Pair& p) { return gpu ? p.gpu : p.cpu; };
        Tensor lin = ops::linear(pick(x), pick(w), pick(bias));       // [100, 33]
        Tensor mm = ops::mm(pick(x), ops::transpose(pick(w), 0, 1));  // [100, 33]
        Tensor addmm = ops::addmm(pick(full_bias), pick(x), ops::transpose(pick(w), 0, 1));
        Tensor bmm = ops::bmm(pick(a3), pick(b3));  // [3, 20, 9]
        Tensor matmul = ops::matmul(pick(a3), pick(b3));
        Tensor loss = ops::add(ops::add(ops::sum(ops::mul(lin, mm)), ops::sum(addmm)),
                               ops::add(ops::sum(ops::mul(bmm, bmm)), ops::sum(matmul)));
        backward(loss);
        return std::vector<Tensor>{lin, mm, addmm, bmm, matmul, loss};
      };
      const std::vector<Tensor> cpu = run(false), gpu = run(true);
      for (size_t i = 0; i < cpu.size(); ++i) expect_close(gpu[i], cpu[i], 1e-4);
      for (Pair* p : {&x, &w, &bias, &a3, &b3, &full_bias}) {
        expect_close(p->gpu.grad(), p->cpu.grad(), 1e-4);
      }
    }
  }
}

// TF32 is off unless asked for: a float32 product then matches the CPU to FP32 rounding, which
// TF32's 10-bit mantissa could not (it is about a thousand times coarser).
TEST(CudaMatmul, Tf32OnlyWhenAskedFor) {
  AG_SKIP_WITHOUT_CUDA();
  if (!cublas_loaded()) GTEST_SKIP() << "TF32 is a cuBLAS option: " << cublas_status();
  GemmPath use(GemmBackend::kCublas);
  EXPECT_FALSE(allow_tf32());
  Pair a = random_pair({256, 512}, 10, DType::kFloat32);
  Pair b = random_pair({512, 256}, 11, DType::kFloat32);
  const Tensor expected = ops::mm(a.cpu, b.cpu);
  expect_close(ops::mm(a.gpu, b.gpu), expected, 2e-5);
  set_allow_tf32(true);
  const Tensor tf32 = ops::mm(a.gpu, b.gpu);
  set_allow_tf32(false);
  expect_close(tf32, expected, 2e-2);  // still the same product, at TF32 precision
}

// Note [Products through cuBLASLt]: a float product of a new shape gets a plan, which the same
// shape reuses; the bias is added in the product's epilogue, with the values of a separate add.
TEST(CudaMatmul, NewShapesGetOnePlan) {
  AG_SKIP_WITHOUT_CUDA();
  if (!cublas_loaded()) GTEST_SKIP() << "cuBLASLt sits beside cuBLAS: " << cublas_status();
  GemmPath use(GemmBackend::kCublas);
  Pair a = random_pair({333, 96}, 12, DType::kFloat32);
  Pair b = random_pair({96, 160}, 13, DType::kFloat32);
  Pair bias = random_pair({160}, 14, DType::kFloat32);
  ops::Backend& cuda = ops::backend_for(kCuda);
  const int before = product_plans();
  const Tensor with_bias = cuda.matmul(a.gpu, b.gpu, false, false, &bias.gpu);
  expect_close(with_bias, ops::backend_for(kCPU).matmul(a.cpu, b.cpu, false, false, &bias.cpu),
               2e-5);
  EXPECT_EQ(product_plans(), before + 1) << cublas_status();
  expect_close(with_bias, ops::add(cuda.matmul(a.gpu, b.gpu, false, false, nullptr), bias.gpu),
               1e-6);
  EXPECT_EQ(product_plans(), before + 2);  // without bias: another plan
  cuda.matmul(a.gpu, b.gpu, false, false, &bias.gpu);
  EXPECT_EQ(product_plans(), before + 2);
}

}  // namespace
}  // namespace ag::cuda
