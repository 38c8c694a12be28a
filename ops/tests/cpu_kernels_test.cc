// CPU kernels with a vector path of their own, against naive loops: threshold_backward's
// compare-and-mask functor (packets, tails and the parallel split, NaNs included), linear's
// product that starts from the bias rows instead of zeroing C first, the packed product that
// writes C without zeroing it, the split fill, the fused scaled product, the elementwise kernels'
// aligned and unaligned maps, binaries that broadcast without expanding, and the dropout mask's
// integer comparison against the counter generator's uniforms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "engine/counters.h"
#include "engine/grad_mode.h"
#include "engine/memory/allocator.h"
#include "engine/options.h"
#include "ops/backend.h"
#include "ops/counter_rng.h"
#include "ops/cpu/isa.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/parallel.h"
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
// The mask kernel decides uniform_from_counter(seed, i) < keep_prob on integers (keep_threshold,
// ops/counter_rng.h), in vector lanes where the instruction set has them and split over threads
// when large: every element is the uniform's comparison, for keep probabilities whose threshold
// is exact (0.5, 0.75) and not (0.1, 0.9), over packet tails and the parallel path.
TEST(DropoutMaskKernel, KeepsExactlyTheElementsWhoseUniformIsBelowTheKeepProbability) {
  NoGradGuard no_grad;
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (const int64_t n : {int64_t{1}, int64_t{7}, int64_t{17}, int64_t{40}, int64_t{1} << 17}) {
      for (const double p : {0.1, 0.25, 0.5, 0.9}) {
        const uint64_t seed = 1000 + static_cast<uint64_t>(n);
        const std::vector<double> mask =
            backend_for(kCPU).dropout_mask({n}, 1.0 - p, seed, dtype, kCPU).to_vector();
        const double keep =
            dtype == DType::kFloat32 ? static_cast<double>(1.0f / float(1.0 - p)) : 1.0 / (1.0 - p);
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; ++i) {
          const bool kept = uniform_from_counter(seed, static_cast<uint64_t>(i)) < 1.0 - p;
          wrong += mask[static_cast<size_t>(i)] != (kept ? keep : 0.0);
        }
        EXPECT_EQ(wrong, 0) << "n " << n << ", p " << p;
      }
    }
  }
}

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

// Note [Products with a zero operand]: a product with an all-zero operand is written without the
// GEMM, but only where that gives the GEMM's bits. The reference is a naive loop in IEEE
// arithmetic: a sum of +0 and -0 terms is +0, a bias of -0 plus +0 is +0, and 0 * Inf is NaN.
std::vector<double> naive_product(const std::vector<double>& a, const std::vector<double>& b,
                                  const std::vector<double>* bias, int64_t m, int64_t n, int64_t k,
                                  bool ta, bool tb) {
  std::vector<double> c(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t p = 0; p < k; ++p)
        dot += a[ta ? p * m + i : i * k + p] * b[tb ? j * k + p : p * n + j];
      c[i * n + j] = bias ? (*bias)[j] + dot : dot;
    }
  }
  return c;
}

void expect_same_bits(const std::vector<double>& got, const std::vector<double>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << what << " at " << i;
    } else {
      ASSERT_EQ(got[i], want[i]) << what << " at " << i;
      ASSERT_EQ(std::signbit(got[i]), std::signbit(want[i])) << what << " at " << i;
    }
  }
}

// Note [Fused formula kernels]: the CPU's fused a * ((b * scale) * c) against the three kernels it
// stands for (the Backend default, one kernel at a time) and a naive loop in the dtype's own
// arithmetic: the same bits, with NaN, infinities, -0 and overflow among the values, for every
// packet tail, the parallel split and unaligned data.
template <typename T>
std::vector<double> naive_scaled_product(const std::vector<double>& a, const std::vector<double>& b,
                                         const std::vector<double>& c, double scale) {
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    out[i] = static_cast<T>(a[i]) *
             ((static_cast<T>(b[i]) * static_cast<T>(scale)) * static_cast<T>(c[i]));
  }
  return out;
}

// The operands of the elementwise kernel tests: n values each, cycling through NaN, infinities,
// -0 and overflow, held by tensors that start `offset` elements into their storage (offset 1:
// unaligned data).
struct ElementwiseOperands {
  ElementwiseOperands(DType dtype, int64_t n, int64_t offset)
      : dtype(dtype), n(n), offset(offset), a(n), b(n), c(n), s(n) {
    const double inf = std::numeric_limits<double>::infinity();
    const double as[] = {1.5, -0.0, inf, kNaN, 3e38, -7.25, 1e-30};
    const double bs[] = {0.5, -3.0, 0.0, -inf, 2e38, 1.0 / 3.0};
    const double cs[] = {2.0, -0.75, 1e-20, 0.1, -5.0};
    const double ss[] = {0.0, -0.0, 1.0, -2.5, 3e38, 0.125, -1e-7, 6.0, kNaN, 0.5, -inf};
    for (int64_t i = 0; i < n; ++i) {
      a[i] = as[(i + offset) % 7];
      b[i] = bs[(i + offset) % 6];
      c[i] = cs[(i + offset) % 5];
      s[i] = ss[(i + offset) % 11];
    }
    ta = tensor(a);
    tb = tensor(b);
    tc = tensor(c);
    what = to_string(dtype) + " n=" + std::to_string(n) + " offset=" + std::to_string(offset);
  }
  // `values` (n of them) in a new tensor, `offset` elements into its storage.
  Tensor tensor(std::vector<double> values) const {
    values.insert(values.begin(), offset, 0.0);
    const Tensor whole = from_vector(values, {n + offset}, dtype);
    return Tensor(Ref<TensorImpl>::make(Shape{n}, dtype, whole.impl()->storage, offset));
  }

  DType dtype;
  int64_t n, offset;
  std::vector<double> a, b, c, s;
  Tensor ta, tb, tc;
  std::string what;
};

// Runs `check` on the operands of both dtypes, both offsets, every length from 1 to 40 (every
// packet tail) and `more_sizes`.
void for_each_operands(const std::vector<int64_t>& more_sizes,
                       const std::function<void(const ElementwiseOperands&)>& check) {
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n <= 40; ++n) sizes.push_back(n);
  sizes.insert(sizes.end(), more_sizes.begin(), more_sizes.end());
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (int64_t n : sizes) {
      for (int64_t offset : {0, 1}) check(ElementwiseOperands(dtype, n, offset));
    }
  }
}

TEST(ScaledProductKernel, GivesTheBitsOfTheThreeKernelsItFuses) {
  NoGradGuard no_grad;
  Backend& cpu = *cpu_backend();
  for_each_operands({int64_t{1} << 17}, [&](const ElementwiseOperands& x) {
    const std::vector<double> want = x.dtype == DType::kFloat32
                                         ? naive_scaled_product<float>(x.a, x.b, x.c, -2.0)
                                         : naive_scaled_product<double>(x.a, x.b, x.c, -2.0);
    expect_same_bits(cpu.scaled_product(x.ta, x.tb, x.tc, -2.0).to_vector(), want,
                     "fused " + x.what);
    expect_same_bits(cpu.Backend::scaled_product(x.ta, x.tb, x.tc, -2.0).to_vector(), want,
                     "three kernels " + x.what);
  });
}

// Note [Sums fused into formulas] (engine/engine.cc): sum += tanh_backward(a, b) and
// sum += scaled_product(a, b, c, -2) in one pass give the bits of the formula's kernel followed by
// the in-place add (the Backend defaults), and of the formula's kernel followed by a naive add in
// the dtype's own arithmetic; for every packet tail, the block boundaries of the fused loop (1024
// elements), the parallel split and unaligned data.
TEST(SumIntoKernels, GiveTheBitsOfTheFormulaThenTheAdd) {
  NoGradGuard no_grad;
  Backend& cpu = *cpu_backend();
  for_each_operands({1023, 1024, 1025, 3000, (1 << 17) + 5}, [&](const ElementwiseOperands& x) {
    auto plus_sum = [&](const Tensor& formula) {
      std::vector<double> v = formula.to_vector();
      for (int64_t i = 0; i < x.n; ++i) {
        v[i] = x.dtype == DType::kFloat32
                   ? static_cast<double>(static_cast<float>(x.s[i]) + static_cast<float>(v[i]))
                   : x.s[i] + v[i];
      }
      return v;
    };
    const std::vector<double> want_tanh =
        plus_sum(cpu.binary(BinaryKind::kTanhBackward, x.ta, x.tb, {x.n}));
    const std::vector<double> want_scaled = plus_sum(cpu.scaled_product(x.ta, x.tb, x.tc, -2.0));

    Tensor fused = x.tensor(x.s), composed = x.tensor(x.s);
    cpu.sum_into_binary(fused, BinaryKind::kTanhBackward, x.ta, x.tb);
    cpu.Backend::sum_into_binary(composed, BinaryKind::kTanhBackward, x.ta, x.tb);
    expect_same_bits(fused.to_vector(), want_tanh, "fused tanh_backward " + x.what);
    expect_same_bits(composed.to_vector(), want_tanh, "composed tanh_backward " + x.what);

    fused = x.tensor(x.s);
    composed = x.tensor(x.s);
    cpu.sum_into_scaled_product(fused, x.ta, x.tb, x.tc, -2.0);
    cpu.Backend::sum_into_scaled_product(composed, x.ta, x.tb, x.tc, -2.0);
    expect_same_bits(fused.to_vector(), want_scaled, "fused scaled_product " + x.what);
    expect_same_bits(composed.to_vector(), want_scaled, "composed scaled_product " + x.what);
  });
}

// Note [Shared packing]: a large product packs op(B) once, in pieces on the threads, and splits
// C's rows over them. Every transpose case, with and without a bias, against a naive loop; the
// shapes reach several depth blocks and several column blocks of the packing (the last one
// narrower), and chunks of rows that do not fill a register panel. The blocks are those of one
// GEMM over the whole product, so the result has the bits of the product on one thread.
TEST(SharedPackingProducts, MatchNaiveLoops) {
  NoGradGuard no_grad;
  Backend& cpu = *cpu_backend();
  const CpuKernels& table = *cpu_kernels(selected_cpu_isa());
  struct Case {
    int64_t m, n, k;
  };
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    bool several_depth_blocks = false, several_column_blocks = false;
    // k = 2500: past Eigen's depth block on any cache size (a 48 KiB L1 with the baseline ISA
    // gives a float kc of 1,008, so a depth of 1,000 was one block there).
    for (const Case& c : {Case{301, 90, 70}, Case{64, 257, 2500}, Case{40, 5000, 200}}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          const MatmulShape shape = {
              ta ? c.k : c.m, ta ? c.m : c.k, tb ? c.n : c.k, tb ? c.k : c.n, ta, tb};
          const MatmulBlocking blocking = dtype == DType::kFloat32
                                              ? table.f32.matmul_blocking(shape)
                                              : table.f64.matmul_blocking(shape);
          several_depth_blocks |= blocking.kc < c.k;
          several_column_blocks |= blocking.nc < c.n;
          const Tensor a = uniform({shape.a_rows, shape.a_cols}, -1, 1, 1, dtype);
          const Tensor b = uniform({shape.b_rows, shape.b_cols}, -1, 1, 2, dtype);
          const Tensor bias = uniform({c.n}, -1, 1, 3, dtype);
          const std::vector<double> va = a.to_vector(), vb = b.to_vector(),
                                    vbias = bias.to_vector();
          const std::vector<double> want = naive_product(va, vb, nullptr, c.m, c.n, c.k, ta, tb);
          const std::vector<double> got = cpu.matmul(a, b, ta, tb, nullptr).to_vector();
          const std::vector<double> got_bias = cpu.matmul(a, b, ta, tb, &bias).to_vector();
          // The same product on one thread, as one Eigen GEMM: the same blocks, so the same bits.
          const Tensor serial = Tensor::empty({c.m, c.n}, dtype);
          if (dtype == DType::kFloat32) {
            table.f32.matmul_rows(a.data<float>(), b.data<float>(), nullptr, serial.data<float>(),
                                  shape, 0, c.m);
          } else {
            table.f64.matmul_rows(a.data<double>(), b.data<double>(), nullptr,
                                  serial.data<double>(), shape, 0, c.m);
          }
          expect_same_bits(got, serial.to_vector(), "against one thread");
          const double tolerance = (dtype == DType::kFloat32 ? 1e-5 : 1e-12) * c.k;
          for (int64_t i = 0; i < c.m * c.n; ++i) {
            ASSERT_NEAR(got[i], want[i], tolerance)
                << to_string(dtype) << " " << c.m << "x" << c.n << "x" << c.k << " ta=" << ta
                << " tb=" << tb << " at " << i;
            ASSERT_NEAR(got_bias[i], want[i] + vbias[i % c.n], tolerance) << "with bias, at " << i;
          }
        }
      }
    }
    EXPECT_TRUE(several_depth_blocks) << to_string(dtype);
    EXPECT_TRUE(several_column_blocks) << to_string(dtype);
  }
}

// Note [Products written, not accumulated]: without a bias, the packed product's first depth
// block writes C, so whatever C's memory held before does not matter. Here it holds NaN, which
// any accumulation would carry into the result; the result must have the bits of Eigen's GEMM
// that zeroes C first (float, every transpose, one and several depth blocks), and the backend's
// product on one thread, which takes the same path, too.
TEST(SharedPackingProducts, WriteCWithoutReadingIt) {
  NoGradGuard no_grad;
  const CpuKernelsFor<float>& k = cpu_kernels(selected_cpu_isa())->f32;
  struct Case {
    int64_t m, n, k;
  };
  bool several_depth_blocks = false;
  for (const Case& c : {Case{301, 90, 70}, Case{64, 257, 2500}}) {  // k: as above
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const MatmulShape shape = {
          ta ? c.k : c.m, ta ? c.m : c.k, tb ? c.n : c.k, tb ? c.k : c.n, ta, tb};
      const MatmulBlocking blocking = k.matmul_blocking(shape);
      several_depth_blocks |= blocking.kc < c.k;
      const Tensor a = uniform({shape.a_rows, shape.a_cols}, -1, 1, 1);
      const Tensor b = uniform({shape.b_rows, shape.b_cols}, -1, 1, 2);
      const Tensor zeroed_first = Tensor::empty({c.m, c.n}, DType::kFloat32);
      k.matmul_rows(a.data<float>(), b.data<float>(), nullptr, zeroed_first.data<float>(), shape, 0,
                    c.m);
      const ScratchBlock<float> packed = scratch_block<float>(blocking.packed_size);  // aligned
      float* p = packed.get();
      for (int64_t piece = 0; piece < blocking.pieces; ++piece)
        k.matmul_pack_b(b.data<float>(), shape, blocking, piece, p);
      const Tensor out = from_vector(std::vector<double>(c.m * c.n, kNaN), {c.m, c.n});
      k.matmul_rows_packed(a.data<float>(), p, nullptr, out.data<float>(), shape, blocking, 0, c.m);
      const std::string what = std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                               std::to_string(c.k) + " ta=" + std::to_string(ta) +
                               " tb=" + std::to_string(tb);
      expect_same_bits(out.to_vector(), zeroed_first.to_vector(), "packed, " + what);
      Tensor one_thread;
      run_with_threads(1, [&] { one_thread = cpu_backend()->matmul(a, b, ta, tb, nullptr); });
      expect_same_bits(one_thread.to_vector(), zeroed_first.to_vector(), "one thread, " + what);
    }
  }
  EXPECT_TRUE(several_depth_blocks);
}

TEST(ZeroOperandProducts, GiveTheProductsBitsAndAreCounted) {
  NoGradGuard no_grad;
  Backend& cpu = *cpu_backend();
  const double kInf = std::numeric_limits<double>::infinity();
  const int64_t m = 130, n = 90, k = 100;  // 1.17M multiply-adds: above the kernels' threshold
  // Zeros of both signs; finite values; a bias with -0 and NaN.
  std::vector<double> zeros(m * k), finite(k * n), bias(n);
  for (int64_t i = 0; i < m * k; ++i) zeros[i] = i % 3 == 0 ? -0.0 : 0.0;
  for (int64_t i = 0; i < k * n; ++i) finite[i] = static_cast<double>(i % 17) * 0.25 - 2.0;
  for (int64_t j = 0; j < n; ++j) bias[j] = j == 0 ? -0.0 : j == 1 ? kNaN : 0.5 * j - 3.0;
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const std::string what =
          to_string(dtype) + " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb);
      const Tensor A = from_vector(zeros, ta ? Shape{k, m} : Shape{m, k}, dtype);
      const Tensor B = from_vector(finite, tb ? Shape{n, k} : Shape{k, n}, dtype);
      const Tensor tbias = from_vector(bias, {n}, dtype);
      // A zero, B finite; then A finite, B zero (the transposed shapes of the same product).
      reset_counters();
      expect_same_bits(cpu.matmul(A, B, ta, tb, nullptr).to_vector(),
                       naive_product(zeros, finite, nullptr, m, n, k, ta, tb), what);
      expect_same_bits(cpu.matmul(A, B, ta, tb, &tbias).to_vector(),
                       naive_product(zeros, finite, &bias, m, n, k, ta, tb), what + " + bias");
      const Tensor Bt = from_vector(zeros, tb ? Shape{m, k} : Shape{k, m}, dtype);
      const Tensor At = from_vector(finite, ta ? Shape{k, n} : Shape{n, k}, dtype);
      expect_same_bits(cpu.matmul(At, Bt, ta, tb, nullptr).to_vector(),
                       naive_product(finite, zeros, nullptr, n, m, k, ta, tb), what + " B zero");
      EXPECT_EQ(counters().products_of_zeros, 3) << what;
      // An Inf in the other operand: 0 * Inf = NaN reaches its column, so the product runs.
      std::vector<double> with_inf = finite;
      with_inf[5] = kInf;
      const Tensor Binf = from_vector(with_inf, tb ? Shape{n, k} : Shape{k, n}, dtype);
      reset_counters();
      expect_same_bits(cpu.matmul(A, Binf, ta, tb, &tbias).to_vector(),
                       naive_product(zeros, with_inf, &bias, m, n, k, ta, tb), what + " Inf");
      EXPECT_EQ(counters().products_of_zeros, 0) << what;
      // Switched off, the product multiplies and gives the same bits.
      OptionsGuard multiply(EngineOptions().with_skip_zero_products(false));
      expect_same_bits(cpu.matmul(A, B, ta, tb, &tbias).to_vector(),
                       naive_product(zeros, finite, &bias, m, n, k, ta, tb), what + " off");
      EXPECT_EQ(counters().products_of_zeros, 0) << what;
    }
  }
}

// A batched product is written as zeros only when a whole operand is zero; a batch whose other
// matrices are not zero multiplies.
TEST(ZeroOperandProducts, BatchedOperandsCountAsAWhole) {
  NoGradGuard no_grad;
  const int64_t m = 130, n = 90, k = 100;
  std::vector<double> a(2 * m * k, 0.0), b(2 * k * n);
  for (int64_t i = 0; i < 2 * k * n; ++i) b[i] = static_cast<double>(i % 13) - 6.0;
  const Tensor B = from_vector(b, {2, k, n}, DType::kFloat64);
  reset_counters();
  const std::vector<double> zero = bmm(from_vector(a, {2, m, k}, DType::kFloat64), B).to_vector();
  EXPECT_EQ(counters().products_of_zeros, 1);
  for (double v : zero) ASSERT_TRUE(v == 0 && !std::signbit(v));
  a[m * k + 7] = 1.0;  // the second matrix of A is not zero
  reset_counters();
  const std::vector<double> mixed = bmm(from_vector(a, {2, m, k}, DType::kFloat64), B).to_vector();
  EXPECT_EQ(counters().products_of_zeros, 0);
  for (int64_t i = 0; i < m * n; ++i) ASSERT_EQ(mixed[i], 0.0) << i;
  // Row 0 of the second product is B's row 7 (A's only nonzero is [0, 7] of that matrix).
  for (int64_t j = 0; j < n; ++j) ASSERT_EQ(mixed[m * n + j], b[k * n + 7 * n + j]) << j;
}

}  // namespace
}  // namespace ag::ops
