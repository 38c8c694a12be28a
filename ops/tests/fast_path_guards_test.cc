// Every CPU fast path just outside its condition: each kernel shortcut with a guard (sum_to's
// column sum, sum_all's vector kernel, binary_impl's flat and scalar paths, for_blocks' parallel
// split, the zero-product shortcut and its known-zero marks, the fused formula kernels and the
// sums fused into them) against naive loops on the shapes and states on both sides of the guard.
// Values are small integers wherever a sum is taken, so every order of summation gives the same
// bits and the comparisons are exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engine/counters.h"
#include "engine/options.h"
#include "ops/backend.h"
#include "ops/fused.h"
#include "ops/ops.h"

namespace ag::ops {
namespace {

using Zeros = Tensor::Zeros;

std::string str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Distinct small integers (exact in float32 sums of up to thousands of terms), with signs.
std::vector<double> integers(int64_t n, int64_t salt = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 7 + salt * 3) % 23 - 11);
  return v;
}

// The index into `small` (right-aligned, size-1 dims broadcast) of element `i` of `big`.
int64_t source_index(const Shape& small, const Shape& big, int64_t i) {
  int64_t index = 0, stride = 1;
  const size_t offset = big.size() - small.size();
  for (size_t d = big.size(); d-- > 0;) {
    const int64_t coordinate = i % big[d];
    i /= big[d];
    if (d >= offset) {
      const int64_t size = small[d - offset];
      if (size != 1) index += coordinate * stride;
      stride *= size;
    }
  }
  return index;
}

// Every shape of rank <= 4 with dims from `dims`.
std::vector<Shape> shapes_up_to_rank_4(const std::vector<int64_t>& dims) {
  std::vector<Shape> out = {{}};
  std::vector<Shape> frontier = {{}};
  for (int rank = 1; rank <= 4; ++rank) {
    std::vector<Shape> next;
    for (const Shape& s : frontier) {
      for (int64_t d : dims) {
        Shape t = s;
        t.push_back(d);
        next.push_back(t);
      }
    }
    out.insert(out.end(), next.begin(), next.end());
    frontier = next;
  }
  return out;
}

// Every shape `a` sums down to: each rank up to a's, each trailing dim kept or made 1.
std::vector<Shape> reducible_targets(const Shape& a) {
  std::vector<Shape> out;
  for (size_t rank = 0; rank <= a.size(); ++rank) {
    for (uint32_t ones = 0; ones < (1u << rank); ++ones) {
      Shape t(a.end() - static_cast<std::ptrdiff_t>(rank), a.end());
      for (size_t d = 0; d < rank; ++d) {
        if ((ones >> d) & 1) t[d] = 1;
      }
      out.push_back(t);
    }
  }
  return out;
}

std::vector<double> naive_sum_to(const std::vector<double>& v, const Shape& from, const Shape& to) {
  std::vector<double> out(static_cast<size_t>(count(to)), 0.0);
  for (int64_t i = 0; i < count(from); ++i) out[source_index(to, from, i)] += v[i];
  return out;
}

void expect_sum_to_matches(const Shape& from, DType dtype) {
  const std::vector<double> v = integers(count(from));
  const Tensor a = from_vector(v, from, dtype);
  for (const Shape& to : reducible_targets(from)) {
    const Tensor got = sum_to(a, to);
    ASSERT_EQ(got.shape(), to) << str(from) << " -> " << str(to);
    ASSERT_EQ(got.to_vector(), naive_sum_to(v, from, to)) << str(from) << " -> " << str(to);
  }
}

// sum_to's column-sum path ([N, C] -> [C] or [1, C], C > 1) and the general loop (its inner run
// summed or added), on every rank up to 4 and every target, dims of 1 included.
TEST(SumToFastPaths, EveryTargetOfEveryRankUpTo4MatchesNaiveLoops) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (const Shape& from : shapes_up_to_rank_4({1, 2, 3})) expect_sum_to_matches(from, dtype);
  }
}

// The column sum's own guard: [N, C] with C of 1 and C > 1, square [N, N] (-> [N, 1] is a row sum,
// whose element count equals the column sum's), and C past any vector width, N of 1.
TEST(SumToFastPaths, ColumnSumShapesOnBothSidesOfItsGuard) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (const Shape& from : std::vector<Shape>{{5, 1},
                                                {1, 5},
                                                {1, 1},
                                                {4, 4},
                                                {16, 16},
                                                {7, 17},
                                                {33, 9},
                                                {3, 64},
                                                {2, 65},
                                                {1, 33},
                                                {2, 4, 17},
                                                {17, 2, 4},
                                                {3, 1, 19}}) {
      expect_sum_to_matches(from, dtype);
    }
  }
}

TEST(SumDimFastPaths, EveryDimOfEveryRankUpTo4WithAndWithoutKeepdim) {
  for (const Shape& from : shapes_up_to_rank_4({1, 2, 3})) {
    if (from.empty()) continue;
    const std::vector<double> v = integers(count(from));
    const Tensor a = from_vector(v, from, DType::kFloat64);
    for (int64_t dim = 0; dim < static_cast<int64_t>(from.size()); ++dim) {
      for (bool keepdim : {false, true}) {
        Shape kept = from;
        kept[dim] = 1;
        const std::vector<double> want = naive_sum_to(v, from, kept);
        const Tensor got = sum(a, dim, keepdim);
        Shape shape = kept;
        if (!keepdim) shape.erase(shape.begin() + dim);
        ASSERT_EQ(got.shape(), shape) << str(from) << " dim " << dim;
        ASSERT_EQ(got.to_vector(), want) << str(from) << " dim " << dim << " keepdim " << keepdim;
        std::vector<double> mean_want = want;
        for (double& x : mean_want) x *= 1.0 / static_cast<double>(from[dim]);
        ASSERT_EQ(mean(a, dim, keepdim).to_vector(), mean_want) << str(from) << " dim " << dim;
      }
    }
  }
}

// sum_all's vector kernel: lengths around every vector width and block boundary it may split at.
TEST(SumAllFastPaths, EveryLengthAroundTheKernelsWidthsMatchesANaiveSum) {
  std::vector<int64_t> lengths;
  for (int64_t n = 0; n <= 70; ++n) lengths.push_back(n);
  for (int64_t n : {127, 128, 129, 255, 256, 257, 1023, 1024, 1025, 65535, 65536, 65537}) {
    lengths.push_back(n);
  }
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (int64_t n : lengths) {
      const std::vector<double> v = integers(n, 1);
      double want = 0;
      for (double x : v) want += x;
      ASSERT_EQ(sum(from_vector(v, {n}, dtype)).to_vector(), std::vector<double>{want})
          << "n " << n;
    }
  }
}

// binary_impl's paths: flat (both operands as many elements as the result, dims of 1 added or
// dropped), scalar (the second operand one element), and the broadcasting loop (everything else,
// the first operand one element included), for every pair of broadcastable shapes of rank <= 3,
// with non-commutative ops so that a swapped operand shows; out of place and in place.
TEST(BinaryFastPaths, EveryBroadcastablePairMatchesNaiveLoops) {
  std::vector<Shape> shapes;
  for (const Shape& s : shapes_up_to_rank_4({1, 2, 3})) {
    if (s.size() <= 3) shapes.push_back(s);
  }
  auto broadcast = [](const Shape& a, const Shape& b, Shape* out) {
    const size_t rank = std::max(a.size(), b.size());
    Shape r(rank, 1);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
      const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
      if (da != db && da != 1 && db != 1) return false;
      r[i] = da == 1 ? db : da;
    }
    *out = r;
    return true;
  };
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (const Shape& sa : shapes) {
      for (const Shape& sb : shapes) {
        Shape so;
        if (!broadcast(sa, sb, &so)) continue;
        const std::vector<double> va = integers(count(sa), 1), vb = integers(count(sb), 2);
        std::vector<double> vb_nonzero = vb;
        for (double& x : vb_nonzero) x = x == 0 ? 5 : x;
        const Tensor a = from_vector(va, sa, dtype), b = from_vector(vb_nonzero, sb, dtype);
        std::vector<double> diff(static_cast<size_t>(count(so))), quot(diff.size());
        for (int64_t i = 0; i < count(so); ++i) {
          const double x = va[source_index(sa, so, i)], y = vb_nonzero[source_index(sb, so, i)];
          diff[i] = x - y;
          quot[i] = dtype == DType::kFloat32
                        ? static_cast<double>(static_cast<float>(x) / static_cast<float>(y))
                        : x / y;
        }
        ASSERT_EQ(sub(a, b).to_vector(), diff) << str(sa) << " - " << str(sb);
        ASSERT_EQ(div(a, b).to_vector(), quot) << str(sa) << " / " << str(sb);
        if (so == sa) {
          Tensor target = from_vector(va, sa, dtype);
          add_(target, neg(b));
          ASSERT_EQ(target.to_vector(), diff) << str(sa) << " -= " << str(sb);
        }
      }
    }
  }
}

// for_blocks runs work of 2^16 elements or more in parallel chunks: one element below, at and
// above, elementwise ops and fills match naive loops in every element.
TEST(ParallelSplitFastPaths, ElementwiseWorkJustBelowAtAndAboveTheThresholdMatchesNaiveLoops) {
  for (int64_t n : {65535, 65536, 65537, 3 * 65536 + 17}) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      const std::vector<double> va = integers(n, 1), vb = integers(n, 2);
      const Tensor a = from_vector(va, {n}, dtype), b = from_vector(vb, {n}, dtype);
      const std::vector<double> d = sub(a, b).to_vector(), m = neg(a).to_vector(),
                                s = mul(a, 3.0).to_vector(), f = full({n}, 2.5, dtype).to_vector();
      ASSERT_EQ(d.size(), static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(d[i], va[i] - vb[i]) << "n " << n << " element " << i;
        ASSERT_EQ(m[i], -va[i]) << "n " << n << " element " << i;
        ASSERT_EQ(s[i], va[i] * 3) << "n " << n << " element " << i;
        ASSERT_EQ(f[i], 2.5) << "n " << n << " element " << i;
      }
    }
  }
}

bool same_bits(double x, double y) {
  return (std::isnan(x) && std::isnan(y)) ||
         (x == y && std::signbit(x) == std::signbit(y) && !std::isnan(x));
}

// matmul's zero-product shortcut runs from 2^20 multiply-adds (with skip_zero_products on): an
// operand of zeros times a finite one is +0 (plus the bias, a -0 in it made +0), times one with an
// Inf or a NaN is NaN in the columns (rows) that hold it. Just below, at and just above the
// threshold, with unmarked and marked (ops::zeros) zeros on either side, the product has the bits
// of the product with the shortcut off, and NaN exactly where the naive sum has one.
TEST(ZeroProductFastPaths, ProductsJustBelowAtAndAboveTheThresholdKeepTheGemmsBits) {
  const int64_t n = 128, k = 128;
  for (int64_t m : {63, 64, 65}) {  // 63 * 128 * 128 < 2^20 = 64 * 128 * 128
    for (bool marked : {false, true}) {
      for (bool zeros_first : {true, false}) {
        for (int special : {0, 1, 2}) {  // none, an Inf, a NaN in the other operand
          const Shape zs = zeros_first ? Shape{m, k} : Shape{k, n};
          const Shape os = zeros_first ? Shape{k, n} : Shape{m, k};
          std::vector<double> zv(static_cast<size_t>(count(zs)), 0.0);
          for (size_t i = 0; i < zv.size(); i += 3) zv[i] = -0.0;
          const Tensor zeros =
              marked ? ops::zeros(zs, DType::kFloat64) : from_vector(zv, zs, DType::kFloat64);
          std::vector<double> ov = integers(count(os), 3);
          for (double& x : ov) x = x == 0 ? -1 : x;
          const size_t at = 37;  // row 0, column 37 of [k, n]; row 0, column 37 of [m, k]
          if (special == 1) ov[at] = std::numeric_limits<double>::infinity();
          if (special == 2) ov[at] = std::numeric_limits<double>::quiet_NaN();
          const Tensor other = from_vector(ov, os, DType::kFloat64);
          const Tensor& a = zeros_first ? zeros : other;
          const Tensor& b = zeros_first ? other : zeros;
          std::vector<double> bias_values = integers(n, 4);
          bias_values[3] = -0.0;
          const Tensor bias = from_vector(bias_values, {n}, DType::kFloat64);
          for (const Tensor* with_bias : {static_cast<const Tensor*>(nullptr), &bias}) {
            Tensor shortcut, gemm;
            {
              OptionsGuard on(EngineOptions().with_skip_zero_products(true));
              reset_counters();
              shortcut = backend_for(kCPU).matmul(a, b, false, false, with_bias);
              EXPECT_EQ(counters().products_of_zeros, m >= 64 && special == 0 ? 1 : 0)
                  << "m " << m << " special " << special;
            }
            {
              OptionsGuard off(EngineOptions().with_skip_zero_products(false));
              gemm = backend_for(kCPU).matmul(a, b, false, false, with_bias);
            }
            const std::vector<double> got = shortcut.to_vector(), want = gemm.to_vector();
            ASSERT_EQ(got.size(), static_cast<size_t>(m * n));
            for (int64_t r = 0; r < m; ++r) {
              for (int64_t c = 0; c < n; ++c) {
                const size_t i = static_cast<size_t>(r * n + c);
                ASSERT_TRUE(same_bits(got[i], want[i]))
                    << "m " << m << " marked " << marked << " zeros_first " << zeros_first
                    << " special " << special << " bias " << (with_bias != nullptr) << " at (" << r
                    << ", " << c << "): " << got[i] << " vs " << want[i];
                // Naive: NaN where a zero meets the Inf or NaN (column 37 of B, or row 0 of A),
                // else the bias plus +0.
                const bool nan = special != 0 && (zeros_first ? c == 37 : r == 0);
                const double naive = nan ? std::nan("") : (with_bias ? bias_values[c] + 0.0 : 0.0);
                ASSERT_TRUE(same_bits(got[i], naive))
                    << "m " << m << " special " << special << " at (" << r << ", " << c
                    << "): " << got[i] << " vs naive " << naive;
              }
            }
          }
        }
      }
    }
  }
}

// A marked tensor written in place is no longer known to be zeros: its product is multiplied.
TEST(ZeroProductFastPaths, AZerosTensorWrittenInPlaceIsMultipliedAsItNowIs) {
  Tensor a = ops::zeros({64, 128}, DType::kFloat64);
  add_(a, ops::ones({64, 128}, DType::kFloat64));
  const Tensor b = ops::ones({128, 128}, DType::kFloat64);
  OptionsGuard on(EngineOptions().with_skip_zero_products(true));
  for (double v : mm(a, b).to_vector()) ASSERT_EQ(v, 128.0);
}

// threshold_backward of a gradient marked as all +0 is a fill that reads nothing (its result is
// +0 whatever the result holds); tanh_backward, outside that guard, multiplies: 0 * (1 - Inf^2)
// is NaN. A gradient of +0 and NaN (kAllButNaN) is read. Each against the naive formula.
TEST(KnownZeroFastPaths, ActivationBackwardsOfMarkedZerosOnBothSidesOfTheGuard) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::vector<double> result = {inf, -inf, nan, 0.0, -0.0, -2.0, 0.5, 3.0};
  const Tensor r = from_vector(result, {8}, DType::kFloat64);
  const Tensor marked = ops::zeros({8}, DType::kFloat64);
  const Tensor unmarked = from_vector(std::vector<double>(8, 0.0), {8}, DType::kFloat64);
  for (const Tensor* g : {&marked, &unmarked}) {
    const std::vector<double> t = threshold_backward(*g, r).to_vector();
    const std::vector<double> h = tanh_backward(*g, r).to_vector();
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_TRUE(same_bits(t[i], 0.0)) << "threshold_backward element " << i << ": " << t[i];
      const double naive = 0.0 * (1 - result[i] * result[i]);
      EXPECT_EQ(std::isnan(h[i]), std::isnan(naive)) << "tanh_backward element " << i;
      if (!std::isnan(naive)) {
        EXPECT_EQ(h[i], 0.0) << "tanh_backward element " << i;
      }
    }
  }
  EXPECT_EQ(threshold_backward(marked, r).known_zeros(), Zeros::kAll);
  EXPECT_EQ(tanh_backward(marked, r).known_zeros(), Zeros::kUnknown);
  std::vector<double> zeros_and_nan(8, 0.0);
  zeros_and_nan[7] = nan;  // where the result is 3 > 0: the gradient passes
  zeros_and_nan[5] = nan;  // where the result is -2: +0
  const Tensor g = from_vector(zeros_and_nan, {8}, DType::kFloat64);
  g.mark_zeros(Zeros::kAllButNaN);
  const std::vector<double> t = threshold_backward(g, r).to_vector();
  EXPECT_TRUE(std::isnan(t[7]));
  EXPECT_TRUE(same_bits(t[5], 0.0));
}

// A sum keeps a mark only when both terms have one: zeros + ones is not zeros, and its product
// (above the threshold, where marks are trusted) is multiplied.
TEST(KnownZeroFastPaths, ASumWithAnUnmarkedTermIsMultipliedAsItIs) {
  const Tensor a =
      add(ops::zeros({64, 128}, DType::kFloat64), ops::ones({64, 128}, DType::kFloat64));
  EXPECT_EQ(a.known_zeros(), Zeros::kUnknown);
  EXPECT_EQ(add(ops::zeros({2}), ops::zeros({2})).known_zeros(), Zeros::kAll);
  OptionsGuard on(EngineOptions().with_skip_zero_products(true));
  for (double v : mm(a, ops::ones({128, 128}, DType::kFloat64)).to_vector()) ASSERT_EQ(v, 128.0);
}

// The fused formula kernels run only where every operand has the first one's layout; an operand
// that broadcasts (in each position in turn) runs the composed ops. Both give
// a * ((b * scale) * c) in that order: the same bits as the naive loop.
TEST(FusedKernelFastPaths, ScaledProductFusesOnlyOperandsOfOneLayoutAndMatchesNaiveLoops) {
  const Shape full_shape = {3, 4}, row = {4};
  for (int broadcast_at = -1; broadcast_at < 3; ++broadcast_at) {
    Shape s[3] = {full_shape, full_shape, full_shape};
    if (broadcast_at >= 0) s[broadcast_at] = row;
    const std::vector<double> va = integers(count(s[0]), 1), vb = integers(count(s[1]), 2),
                              vc = integers(count(s[2]), 3);
    const Tensor a = from_vector(va, s[0], DType::kFloat64),
                 b = from_vector(vb, s[1], DType::kFloat64),
                 c = from_vector(vc, s[2], DType::kFloat64);
    reset_counters();
    const std::vector<double> got = scaled_product(a, b, c, 0.3).to_vector();
    EXPECT_EQ(counters().fused_formulas, broadcast_at < 0 ? 1 : 0) << broadcast_at;
    ASSERT_EQ(got.size(), 12u);
    for (int64_t i = 0; i < 12; ++i) {
      const double x = va[source_index(s[0], full_shape, i)],
                   y = vb[source_index(s[1], full_shape, i)],
                   z = vc[source_index(s[2], full_shape, i)];
      ASSERT_EQ(got[i], x * ((y * 0.3) * z)) << "broadcast at " << broadcast_at << " element " << i;
    }
  }
}

// sum += formula(operands) in one pass only where every operand has sum's layout: otherwise
// nothing is written (and the caller sums as before). In each position in turn.
TEST(FusedKernelFastPaths, SumsFuseOnlyIntoOperandsOfTheSumsLayout) {
  const Shape full_shape = {5, 7}, row = {7};
  const std::vector<double> base = integers(35, 9);
  for (int other_at = -1; other_at < 3; ++other_at) {
    Shape s[3] = {full_shape, full_shape, full_shape};
    if (other_at >= 0) s[other_at] = row;
    const Tensor x = from_vector(integers(count(s[0]), 1), s[0], DType::kFloat64),
                 y = from_vector(integers(count(s[1]), 2), s[1], DType::kFloat64),
                 z = from_vector(integers(count(s[2]), 3), s[2], DType::kFloat64);
    const Tensor sum_a = from_vector(base, full_shape, DType::kFloat64);
    const bool fused_a = add_scaled_product_into(sum_a, x, y, z, 0.5);
    EXPECT_EQ(fused_a, other_at < 0) << other_at;
    const std::vector<double> want_a =
        fused_a ? add(from_vector(base, full_shape, DType::kFloat64), scaled_product(x, y, z, 0.5))
                      .to_vector()
                : base;
    EXPECT_EQ(sum_a.to_vector(), want_a) << other_at;
    if (other_at == 2) continue;  // tanh_backward has two operands
    const Tensor sum_b = from_vector(base, full_shape, DType::kFloat64);
    const bool fused_b = add_tanh_backward_into(sum_b, x, y);
    EXPECT_EQ(fused_b, other_at < 0) << other_at;
    const std::vector<double> want_b =
        fused_b
            ? add(from_vector(base, full_shape, DType::kFloat64), tanh_backward(x, y)).to_vector()
            : base;
    EXPECT_EQ(sum_b.to_vector(), want_b) << other_at;
  }
  // Another dtype is another layout too.
  const Tensor sum32 = from_vector(base, full_shape, DType::kFloat32);
  const Tensor x64 = from_vector(integers(35, 1), full_shape, DType::kFloat64);
  EXPECT_FALSE(add_tanh_backward_into(sum32, x64, x64));
  EXPECT_EQ(sum32.to_vector(), base);
}

}  // namespace
}  // namespace ag::ops
