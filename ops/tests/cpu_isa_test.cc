// The CPU kernels of every instruction set this CPU runs (baseline, AVX2, AVX-512; Note [Kernel
// instruction sets] in ops/cpu/isa.h), each against naive loops, through the backend built on that
// set's kernels: every elementwise kind of the op list (against its scalar rule in double, Note
// [The op list] in ops/kinds.h), reductions and all four products, on both dtypes and at sizes
// that take the vector tails and the parallel split. Also which set the ops use: AG_CPU_ISA forces
// one (the *_forced_* targets), and AG_EXPECT_CPU_ISA names the one a test expects to be picked on
// an emulated CPU (avx2_cpu_test.sh).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/grad_mode.h"
#include "ops/backend.h"
#include "ops/cpu/isa.h"
#include "ops/ops.h"
#include "ops/scalar_rules.h"

namespace ag::ops {
namespace {

const CpuIsa kAllIsas[] = {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512};

// The instruction sets whose kernels this CPU can run and this build has.
std::vector<CpuIsa> runnable_isas() {
  std::vector<CpuIsa> isas;
  for (CpuIsa isa : kAllIsas) {
    if (cpu_supports(isa) && cpu_isa_built(isa)) isas.push_back(isa);
  }
  return isas;
}

std::vector<double> values(int64_t n, double low, double high, uint64_t seed) {
  return uniform({n}, low, high, seed, DType::kFloat64).to_vector();
}

// |got - want| within an absolute-plus-relative bound that suits the dtype: exact kernels are
// checked with tolerance 0.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << what << " i=" << i;
      continue;
    }
    ASSERT_LE(std::abs(got[i] - want[i]), tol * (1 + std::abs(want[i])))
        << what << " i=" << i << " got " << got[i] << " want " << want[i];
  }
}

// Values rounded to the dtype, so that the naive loops see exactly what the kernels see.
std::vector<double> rounded(const std::vector<double>& v, DType dtype) {
  return from_vector(v, {static_cast<int64_t>(v.size())}, dtype).to_vector();
}

// Sizes: below and across a packet of 4, 8 and 16 lanes, and (kLarge) above the parallel
// threshold, where the arrays are split into chunks; the split does not depend on the kind, so
// only a few kinds take it.
const int64_t kSizes[] = {1, 7, 16, 33, 1000};
const int64_t kLarge = (int64_t{1} << 16) + 5;
bool large_for(BinaryKind kind) {
  return kind == BinaryKind::kAdd || kind == BinaryKind::kThresholdBackward;
}
bool large_for(UnaryKind kind) { return kind == UnaryKind::kTanh || kind == UnaryKind::kRelu; }

struct Case {
  CpuIsa isa;
  DType dtype;
  Backend& backend;
  // Rounding bound for kernels that approximate (transcendentals, reordered sums).
  double tol() const { return dtype == DType::kFloat32 ? 2e-6 : 1e-13; }
  std::string name(const std::string& what) const {
    return std::string(cpu_isa_name(isa)) + " " + to_string(dtype) + " " + what;
  }
};

// `v` as a strided tensor: every other element of a twice longer one.
Tensor every_other(const std::vector<double>& v, DType dtype) {
  std::vector<double> spaced(2 * v.size(), -7.0);
  for (size_t i = 0; i < v.size(); ++i) spaced[2 * i] = v[i];
  const int64_t n = static_cast<int64_t>(v.size());
  return slice(from_vector(spaced, {2 * n}, dtype), 0, 0, 2 * n, 2);
}

void check_binary(const Case& c) {
  for (int64_t n : {kSizes[0], kSizes[1], kSizes[2], kSizes[3], kSizes[4], kLarge}) {
    // Positive bases for pow; b also crosses zero for threshold.
    const std::vector<double> a = rounded(values(n, 0.5, 2, 1), c.dtype),
                              b = rounded(values(n, -1.5, 1.5, 2), c.dtype);
    const Tensor ta = from_vector(a, {n}, c.dtype), tb = from_vector(b, {n}, c.dtype);
    for (BinaryKind kind : kAllBinaryKinds) {
      if (n == kLarge && !large_for(kind)) continue;
      std::vector<double> want(n), want_scalar(n);
      for (int64_t i = 0; i < n; ++i) {
        want[i] = apply_binary<double>(kind, a[i], b[i]);
        want_scalar[i] = apply_binary<double>(kind, a[i], b[0]);
      }
      // Exact ops round the exact result once, as the naive loop on rounded inputs does after
      // its own rounding to the dtype; tanh_backward and sigmoid_backward round three times.
      const bool exact = kind != BinaryKind::kPow && kind != BinaryKind::kTanhBackward &&
                         kind != BinaryKind::kSigmoidBackward;
      const double tol = exact ? 0 : c.tol();
      const std::string what = c.name(std::string(kind_name(kind)) + " n=" + std::to_string(n));
      expect_close(c.backend.binary(kind, ta, tb, {n}).to_vector(), rounded(want, c.dtype), tol,
                   what);
      const Tensor scalar = from_vector({b[0]}, {}, c.dtype);
      expect_close(c.backend.binary(kind, ta, scalar, {n}).to_vector(),
                   rounded(want_scalar, c.dtype), tol, what + " (scalar b)");
      // Note [Kernels round as their rules] (engine/copts.bzl): a strided operand, which runs the
      // scalar rule, gives the vector kernels' bits, so an op's value does not depend on layout.
      expect_close(c.backend.binary(kind, ta, every_other(b, c.dtype), {n}).to_vector(),
                   c.backend.binary(kind, ta, tb, {n}).to_vector(), 0, what + " (strided b)");
      expect_close(c.backend.binary(kind, ta, expand(scalar, {n}), {n}).to_vector(),
                   c.backend.binary(kind, ta, scalar, {n}).to_vector(), 0,
                   what + " (expanded scalar b)");
    }
  }
}

void check_unary(const Case& c) {
  for (int64_t n : {kSizes[0], kSizes[1], kSizes[2], kSizes[3], kSizes[4], kLarge}) {
    const std::vector<double> x = rounded(values(n, 0.1, 3, 3), c.dtype);
    const std::vector<double> signed_x = rounded(values(n, -3, 3, 4), c.dtype);
    const Tensor tx = from_vector(x, {n}, c.dtype), tsx = from_vector(signed_x, {n}, c.dtype);
    for (UnaryKind kind : kAllUnaryKinds) {
      if (n == kLarge && !large_for(kind)) continue;
      // log and pow need positive inputs; the rest see both signs.
      const bool positive = kind == UnaryKind::kLog || kind == UnaryKind::kPowScalar;
      const std::vector<double>& in = positive ? x : signed_x;
      const double s = 1.5;
      std::vector<double> want(n);
      for (int64_t i = 0; i < n; ++i) want[i] = apply_unary<double>(kind, in[i], s);
      const bool exact = kind == UnaryKind::kNeg || kind == UnaryKind::kRelu ||
                         kind == UnaryKind::kAddScalar || kind == UnaryKind::kMulScalar;
      expect_close(c.backend.unary(kind, positive ? tx : tsx, s).to_vector(),
                   rounded(want, c.dtype), exact ? 0 : c.tol(),
                   c.name(std::string(kind_name(kind)) + " n=" + std::to_string(n)));
    }
  }
}

void check_reductions_and_fill(const Case& c) {
  for (int64_t n : {kSizes[0], kSizes[1], kSizes[2], kSizes[3], kSizes[4], kLarge}) {
    const std::vector<double> x = rounded(values(n, -1, 1, 5), c.dtype);
    double total = 0;
    for (double v : x) total += v;
    expect_close(c.backend.sum_all(from_vector(x, {n}, c.dtype)).to_vector(), {total},
                 c.tol() * 4 * std::sqrt(static_cast<double>(n)), c.name("sum_all"));
    expect_close(c.backend.fill({n}, -2.25, c.dtype, kCPU).to_vector(),
                 std::vector<double>(n, -2.25), 0, c.name("fill"));
  }
  // [rows, cols] -> [cols]: the column sum of bias gradients.
  const int64_t rows = 1000, cols = 37;
  const std::vector<double> m = rounded(values(rows * cols, -1, 1, 6), c.dtype);
  std::vector<double> want(cols, 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) want[j] += m[r * cols + j];
  }
  expect_close(c.backend.sum_to(from_vector(m, {rows, cols}, c.dtype), {cols}).to_vector(), want,
               c.tol() * 40, c.name("column sum"));
}

void check_matmul(const Case& c) {
  // (m, n, k): one small product on the calling thread, and the hessian's shapes scaled down but
  // still above the parallel split (row blocks), with an odd k.
  struct Dims {
    int64_t m, n, k;
  };
  for (Dims d : {Dims{3, 5, 4}, Dims{300, 64, 67}, Dims{64, 48, 500}}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const std::vector<double> a = rounded(values(d.m * d.k, -1, 1, 7), c.dtype),
                                b = rounded(values(d.k * d.n, -1, 1, 8), c.dtype),
                                bias = rounded(values(d.n, -1, 1, 9), c.dtype);
      // A is stored [k, m] when transposed, B [n, k].
      const Tensor tA = from_vector(a, ta ? Shape{d.k, d.m} : Shape{d.m, d.k}, c.dtype);
      const Tensor tB = from_vector(b, tb ? Shape{d.n, d.k} : Shape{d.k, d.n}, c.dtype);
      const Tensor tbias = from_vector(bias, {d.n}, c.dtype);
      std::vector<double> want(d.m * d.n), want_bias(d.m * d.n);
      for (int64_t i = 0; i < d.m; ++i) {
        for (int64_t j = 0; j < d.n; ++j) {
          double dot = 0;
          for (int64_t p = 0; p < d.k; ++p) {
            dot += a[ta ? p * d.m + i : i * d.k + p] * b[tb ? j * d.k + p : p * d.n + j];
          }
          want[i * d.n + j] = dot;
          want_bias[i * d.n + j] = dot + bias[j];
        }
      }
      const double tol = c.tol() * 2 * std::sqrt(static_cast<double>(d.k));
      const std::string what =
          c.name("matmul " + std::to_string(d.m) + "x" + std::to_string(d.n) + "x" +
                 std::to_string(d.k) + " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
      expect_close(c.backend.matmul(tA, tB, ta, tb, nullptr).to_vector(), want, tol, what);
      expect_close(c.backend.matmul(tA, tB, ta, tb, &tbias).to_vector(), want_bias, tol,
                   what + " + bias");
    }
  }
}

TEST(CpuIsaKernels, EveryInstructionSetThisCpuRunsMatchesNaiveLoops) {
  NoGradGuard no_grad;
  const std::vector<CpuIsa> isas = runnable_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), CpuIsa::kBaseline);  // every x86-64 CPU runs the baseline
  for (CpuIsa isa : isas) {
    Backend* backend = cpu_backend_for(isa);
    ASSERT_NE(backend, nullptr) << cpu_isa_name(isa);
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      const Case c{isa, dtype, *backend};
      check_binary(c);
      check_unary(c);
      check_reductions_and_fill(c);
      check_matmul(c);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(CpuIsaKernels, EachBuiltInstructionSetHasItsOwnKernels) {
  EXPECT_TRUE(cpu_isa_built(CpuIsa::kBaseline));
  EXPECT_TRUE(cpu_isa_built(CpuIsa::kAvx2));
  for (CpuIsa isa : kAllIsas) {
    if (!cpu_isa_built(isa)) continue;
    EXPECT_NE(cpu_backend_for(isa), nullptr);
    for (CpuIsa other : kAllIsas) {
      if (other != isa && cpu_isa_built(other)) {
        EXPECT_NE(cpu_kernels(isa), cpu_kernels(other));
      }
    }
  }
}

TEST(CpuIsaSelection, TheOpsUseTheForcedOrTheBestInstructionSet) {
  const CpuIsa selected = selected_cpu_isa();
  EXPECT_EQ(cpu_backend(), cpu_backend_for(selected));
  const char* forced = std::getenv("AG_CPU_ISA");
  if (forced != nullptr && *forced != '\0') {
    EXPECT_EQ(std::string(cpu_isa_name(selected)), forced);
  } else {
    EXPECT_EQ(selected, runnable_isas().back());
  }
  // Set by avx2_cpu_test.sh, which runs this test on an emulated CPU.
  if (const char* expected = std::getenv("AG_EXPECT_CPU_ISA")) {
    EXPECT_EQ(std::string(cpu_isa_name(selected)), expected);
  }
}

// Restores AG_CPU_ISA when a test that changes it ends.
class ForcedIsaEnv {
 public:
  ForcedIsaEnv() {
    const char* old = std::getenv("AG_CPU_ISA");
    had_ = old != nullptr;
    if (had_) old_ = old;
  }
  ~ForcedIsaEnv() {
    if (had_) {
      setenv("AG_CPU_ISA", old_.c_str(), 1);
    } else {
      unsetenv("AG_CPU_ISA");
    }
  }

 private:
  bool had_ = false;
  std::string old_;
};

std::string selection_error() {
  try {
    selected_cpu_isa();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(CpuIsaSelection, AnUnknownOrUnusableForcedInstructionSetIsAClearError) {
  ForcedIsaEnv restore;
  setenv("AG_CPU_ISA", "sse9", 1);
  EXPECT_NE(selection_error().find("AG_CPU_ISA=sse9: unknown instruction set"), std::string::npos)
      << selection_error();
  for (CpuIsa isa : kAllIsas) {
    setenv("AG_CPU_ISA", cpu_isa_name(isa), 1);
    const std::string error = selection_error();
    if (!cpu_supports(isa)) {
      EXPECT_NE(error.find("this CPU cannot run"), std::string::npos) << error;
    } else if (!cpu_isa_built(isa)) {
      EXPECT_NE(error.find("this build has no kernels for it"), std::string::npos) << error;
    } else {
      EXPECT_EQ(error, "no error");
      EXPECT_EQ(selected_cpu_isa(), isa);
    }
  }
}

}  // namespace
}  // namespace ag::ops
