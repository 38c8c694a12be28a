// The CPU kernels of ops/cpu/kernels.h on Eigen, for the instruction set named by AG_CPU_ISA
// (engine/BUILD compiles this file once per instruction set). Contiguous inputs are mapped, never
// copied.
//
// Nothing here may define a symbol that another copy defines too (Note [Kernel instruction sets],
// ops/cpu/isa.h): only Eigen (renamed per copy), the standard library's C functions and this
// file's own code, all in the copy's namespace; no engine headers, no std:: containers.
#ifndef AG_CPU_ISA
#error "compile ops/cpu/kernels.cc with AG_CPU_ISA set (baseline, avx2 or avx512)"
#endif
#define AG_CPU_CONCAT2(a, b) a##b
#define AG_CPU_CONCAT(a, b) AG_CPU_CONCAT2(a, b)
// Eigen is header-only: each copy of it gets a namespace of its own, so that the linker never
// swaps one copy's functions for another's (their mangled names would be equal).
#define Eigen AG_CPU_CONCAT(Eigen_, AG_CPU_ISA)
#define AG_CPU_NAMESPACE AG_CPU_CONCAT(cpu_, AG_CPU_ISA)

#include "ops/cpu/kernels.h"

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace ag::ops::AG_CPU_NAMESPACE {
namespace {

// Flat arrays as Eigen maps, with the alignment they are known to have.
template <typename T, int Alignment = Eigen::Unaligned>
using InVec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>, Alignment>;
template <typename T, int Alignment = Eigen::Unaligned>
using OutVec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>, Alignment>;
template <typename T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using MatMap = Eigen::Map<Mat<T>>;
template <typename T>
using ConstMatMap = Eigen::Map<const Mat<T>>;

// threshold_backward's grad * (result > 0) as an Eigen functor with a packet path: a compare
// mask and-ed with the gradient. Eigen 3.4's select() and a bool-to-float cast both fall back to
// scalar code here, which made this op twice as slow as an add in the hessian benchmark.
template <typename T>
struct ThresholdOp {
  T operator()(T grad, T result) const { return result > T(0) ? grad : T(0); }
  template <typename Packet>
  Packet packetOp(const Packet& grad, const Packet& result) const {
    using namespace Eigen::internal;
    return pand(grad, pcmp_lt(pzero(result), result));
  }
};

}  // namespace
}  // namespace ag::ops::AG_CPU_NAMESPACE

template <typename T>
struct Eigen::internal::functor_traits<ag::ops::AG_CPU_NAMESPACE::ThresholdOp<T>> {
  enum { Cost = 2, PacketAccess = packet_traits<T>::HasCmp };
};

namespace ag::ops::AG_CPU_NAMESPACE {
namespace {

// out = a (kind) b over whole arrays, vectorized by Eigen: each kind's rule of the op list (Note
// [The op list], ops/kinds.h) as an Eigen expression, which Eigen vectorizes and a scalar lambda
// would not. No default: with -Wall -Werror a kind missing here does not compile.
template <typename T, typename A, typename B, typename O>
void eigen_binary(BinaryKind kind, const A& a, const B& b, O&& out) {
  switch (kind) {
    case BinaryKind::kAdd:
      out = a + b;
      break;
    case BinaryKind::kSub:
      out = a - b;
      break;
    case BinaryKind::kMul:
      out = a * b;
      break;
    case BinaryKind::kDiv:
      out = a / b;
      break;
    case BinaryKind::kPow:
      out = a.pow(b);
      break;
    case BinaryKind::kThreshold:
      out = a.binaryExpr(b, ThresholdOp<T>());
      break;
    case BinaryKind::kTanhBackward:
      out = a * (T(1) - b * b);
      break;
  }
}

// Calls fn(std::integral_constant<int, A>) with A = Eigen::Aligned64 when every pointer is 64-byte
// aligned, as fresh tensors always are (Note [Data block alignment], engine/allocator.cc), else
// with Eigen::Unaligned. Aligned maps spare Eigen its run-time peeling to an aligned start,
// about 2 ns of a 1000-element op. (Parallel chunks start at multiples of 16 elements, so they
// stay aligned.)
template <typename Fn>
void with_alignment(const void* p0, const void* p1, const void* p2, const Fn& fn) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(p0) | reinterpret_cast<uintptr_t>(p1) |
                         reinterpret_cast<uintptr_t>(p2);
  if (bits % 64 == 0) {
    fn(std::integral_constant<int, Eigen::Aligned64>());
  } else {
    fn(std::integral_constant<int, Eigen::Unaligned>());
  }
}

template <typename T>
void binary(BinaryKind kind, const T* a, const T* b, T* out, int64_t n) {
  with_alignment(a, b, out, [&](auto align) {
    constexpr int A = decltype(align)::value;
    eigen_binary<T>(kind, InVec<T, A>(a, n), InVec<T, A>(b, n), OutVec<T, A>(out, n));
  });
}

template <typename T>
void binary_scalar(BinaryKind kind, const T* a, T b, T* out, int64_t n) {
  eigen_binary<T>(kind, InVec<T>(a, n), Eigen::Array<T, Eigen::Dynamic, 1>::Constant(n, b),
                  OutVec<T>(out, n));
}

// The unary kinds likewise (Note [The op list]); no default, so a missing kind does not compile.
template <typename T, int A>
void unary_aligned(UnaryKind kind, const T* in, T* out, int64_t n, double scalar) {
  InVec<T, A> x(in, n);
  OutVec<T, A> y(out, n);
  const T s = static_cast<T>(scalar);
  switch (kind) {
    case UnaryKind::kNeg:
      y = -x;
      break;
    case UnaryKind::kExp:
      y = x.exp();
      break;
    case UnaryKind::kLog:
      y = x.log();
      break;
    case UnaryKind::kTanh:
      y = x.tanh();
      break;
    case UnaryKind::kSigmoid:
      y = T(1) / (T(1) + (-x).exp());
      break;
    case UnaryKind::kRelu:
      y = x.max(T(0));
      break;
    case UnaryKind::kAddScalar:
      y = x + s;
      break;
    case UnaryKind::kMulScalar:
      y = x * s;
      break;
    case UnaryKind::kPowScalar:
      y = x.pow(s);
      break;
    case UnaryKind::kRpowScalar:
      y = x.unaryExpr([s](T v) { return std::pow(s, v); });
      break;
  }
}

template <typename T>
void unary(UnaryKind kind, const T* in, T* out, int64_t n, double scalar) {
  with_alignment(in, out, out, [&](auto align) {
    unary_aligned<T, decltype(align)::value>(kind, in, out, n, scalar);
  });
}

template <typename T>
void fill(T* out, int64_t n, T value) {
  OutVec<T>(out, n).setConstant(value);
}

template <typename T>
T sum(const T* a, int64_t n) {
  return InVec<T>(a, n).sum();
}

template <typename T>
void column_sum(const T* a, int64_t rows, int64_t cols, T* out) {
  Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(out, cols) =
      ConstMatMap<T>(a, rows, cols).colwise().sum();
}

template <typename T>
void matmul_rows(const T* a, const T* b, const T* bias, T* out, const MatmulShape& s, int64_t r0,
                 int64_t rows) {
  ConstMatMap<T> A(a, s.a_rows, s.a_cols);
  ConstMatMap<T> B(b, s.b_rows, s.b_cols);
  MatMap<T> C(out, s.m(), s.n());
  auto c = C.middleRows(r0, rows);
  // Eigen's GEMM accumulates into C, so `c = A B` first zeroes C. With a bias, C starts as the
  // bias rows instead and the product is added on: one pass over C fewer.
  if (bias) {
    const Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> row(bias, C.cols());
    for (int64_t r = 0; r < rows; ++r) c.row(r) = row;
  } else {
    c.setZero();
  }
  const bool ta = s.trans_a, tb = s.trans_b;
  if (!ta && !tb) c.noalias() += A.middleRows(r0, rows) * B;
  if (!ta && tb) c.noalias() += A.middleRows(r0, rows) * B.transpose();
  if (ta && !tb) c.noalias() += A.transpose().middleRows(r0, rows) * B;
  if (ta && tb) c.noalias() += A.transpose().middleRows(r0, rows) * B.transpose();
}

template <typename T>
constexpr CpuKernelsFor<T> table() {
  return {&binary<T>, &binary_scalar<T>, &unary<T>,      &fill<T>,
          &sum<T>,    &column_sum<T>,    &matmul_rows<T>};
}

constexpr CpuKernels kKernels = {table<float>(), table<double>()};

}  // namespace

const CpuKernels& kernels() { return kKernels; }

}  // namespace ag::ops::AG_CPU_NAMESPACE
