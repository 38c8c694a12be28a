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

#include "ops/counter_rng.h"
#include "ops/scalar_rules.h"  // AG_SCALAR_MATH only: this file instantiates none of its functions

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

// A kind's rule of the op list (Note [The op list], ops/kinds.h) as written there, for the kinds
// without an Eigen expression below: out = a (kind) b element by element, through Eigen (a and b
// may be any of its expressions).
template <typename T, typename A, typename B, typename O>
void rule_binary(BinaryKind kind, const A& a, const B& b, O&& out) {
#define AG_RULE_BINARY(Name, name, rule) \
  case BinaryKind::k##Name:              \
    out = a.binaryExpr(b, [](T x, T y) { \
      AG_SCALAR_MATH;                    \
      return static_cast<T>(rule);       \
    });                                  \
    return;
  switch (kind) { AG_BINARY_OPS(AG_RULE_BINARY) }
#undef AG_RULE_BINARY
}

// out = (kind)(in) with the op's scalar s, as a plain loop per kind, which the compiler may
// vectorize where the rule allows.
template <typename T>
void rule_unary(UnaryKind kind, const T* in, T* out, int64_t n, T s) {
#define AG_RULE_UNARY(Name, name, rule) \
  case UnaryKind::k##Name:              \
    for (int64_t i = 0; i < n; ++i) {   \
      AG_SCALAR_MATH;                   \
      const T x = in[i];                \
      out[i] = static_cast<T>(rule);    \
    }                                   \
    return;
  switch (kind) { AG_UNARY_OPS(AG_RULE_UNARY) }
#undef AG_RULE_UNARY
}

// out = a (kind) b over whole arrays, vectorized by Eigen: a kind's rule as an Eigen expression,
// which Eigen vectorizes and a scalar lambda would not. A kind without one here runs its rule
// (rule_binary): pow among them, as Eigen's vectorized pow rounds otherwise than std::pow, which
// a strided operand's scalar loop calls (Note [Kernels round as their rules], engine/copts.bzl).
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
    case BinaryKind::kThresholdBackward:
      out = a.binaryExpr(b, ThresholdOp<T>());
      break;
    case BinaryKind::kTanhBackward:
      out = a * (T(1) - b * b);
      break;
    case BinaryKind::kSigmoidBackward:
      out = a * (T(1) - b) * b;
      break;
    default:
      rule_binary<T>(kind, a, b, out);
  }
}

// Calls fn(std::integral_constant<int, A>) with A = Eigen::Aligned64 when every pointer is 64-byte
// aligned, as fresh tensors always are (Note [Data block alignment], engine/allocator.cc), else
// with Eigen::Unaligned. Aligned maps spare Eigen its run-time peeling to an aligned start.
// (Parallel chunks start at multiples of 16 elements, so they
// stay aligned.)
template <typename Fn, typename... Pointers>
void with_alignment(const Fn& fn, const Pointers*... pointers) {
  const uintptr_t bits = (reinterpret_cast<uintptr_t>(pointers) | ...);
  if (bits % 64 == 0) {
    fn(std::integral_constant<int, Eigen::Aligned64>());
  } else {
    fn(std::integral_constant<int, Eigen::Unaligned>());
  }
}

template <typename T>
void binary(BinaryKind kind, const T* a, const T* b, T* out, int64_t n) {
  with_alignment(
      [&](auto align) {
        constexpr int A = decltype(align)::value;
        eigen_binary<T>(kind, InVec<T, A>(a, n), InVec<T, A>(b, n), OutVec<T, A>(out, n));
      },
      a, b, out);
}

template <typename T>
void binary_scalar(BinaryKind kind, const T* a, T b, T* out, int64_t n) {
  eigen_binary<T>(kind, InVec<T>(a, n), Eigen::Array<T, Eigen::Dynamic, 1>::Constant(n, b),
                  OutVec<T>(out, n));
}

template <typename T>
void scaled_product(const T* a, const T* b, const T* c, T scale, T* out, int64_t n) {
  with_alignment(
      [&](auto align) {
        constexpr int A = decltype(align)::value;
        OutVec<T, A>(out, n) =
            InVec<T, A>(a, n) * ((InVec<T, A>(b, n) * scale) * InVec<T, A>(c, n));
      },
      a, b, c, out);
}

// The unary kinds likewise; a kind without an Eigen expression here runs its rule (rule_unary).
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
    default:
      rule_unary<T>(kind, in, out, n, s);
  }
}

template <typename T>
void unary(UnaryKind kind, const T* in, T* out, int64_t n, double scalar) {
  with_alignment(
      [&](auto align) { unary_aligned<T, decltype(align)::value>(kind, in, out, n, scalar); }, in,
      out);
}

template <typename T>
void fill(T* out, int64_t n, T value) {
  OutVec<T>(out, n).setConstant(value);
}

// Vectorized where the instruction set multiplies 64-bit lanes (AVX-512's vpmullq): -O2's cost
// model leaves the loop scalar.
template <typename T>
[[gnu::optimize("vect-cost-model=dynamic")]] void dropout_mask(T* out, int64_t first, int64_t n,
                                                               uint64_t seed, uint64_t threshold,
                                                               T keep) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = kept_by_counter(seed, static_cast<uint64_t>(first + i), threshold) ? keep : T(0);
  }
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

// Note [Shared packing]
// Eigen's GEMM first copies ("packs") both operands into the order its inner kernel (gebp)
// reads. When each parallel chunk of C's rows ran a GEMM of its own, every chunk packed all of
// op(B) again: with 8 chunks, 8 copies of op(B), which for a weight gradient g^T h is all of h
// (batch x width), read from memory each time. So a large product instead packs op(B) once,
// spread over the threads in pieces (matmul_pack_b), and each chunk of rows packs only its own
// rows of op(A) and runs gebp against the shared copy (matmul_rows_packed).
//
// In Eigen's column-major terms the row-major C = op(A) op(B) is C^T = op(B)^T op(A)^T: Eigen's
// left operand, the one packed once, is op(B)^T (n x k), and C's rows are its columns. The
// block sizes are Eigen's own for the whole product (computeProductBlockingSizes), and chunks of
// rows start on whole register panels (nr rows of C), so every element of C is summed by the
// same kernel path, in the same blocks and order, as in one GEMM over the whole product on one
// thread: the bits do not depend on the thread count (ops/tests/cpu_kernels_test.cc).
template <typename T>
using Traits = Eigen::internal::gebp_traits<T, T>;
template <typename T, int Order>
using ConstBlasMapper = Eigen::internal::const_blas_data_mapper<T, Eigen::Index, Order>;
template <typename T>
using ResultMapper =
    Eigen::internal::blas_data_mapper<T, Eigen::Index, Eigen::ColMajor, Eigen::Unaligned, 1>;

// Note [Products written, not accumulated]
// Eigen's kernel (gebp) adds its block of A B into C: it loads C, adds, stores. A product without
// a bias therefore had to zero C first, a pass over the whole output (2% of the hessian step). For
// the first depth block, gebp instead gets FreshResult, a result mapper whose loads read +0 without
// touching memory: the kernel stores 0 + (its sum) as before, so the bits are those of zeroing
// first (a sum of -0 still becomes +0), and C is written once. Later depth blocks, and products
// that start from a bias, accumulate into C through Eigen's own mapper.
template <typename T>
class FreshLinearResult {
 public:
  explicit FreshLinearResult(T* data) : data_(data) {}
  void prefetch(int i) const { Eigen::internal::prefetch(data_ + i); }
  template <typename Packet>
  Packet loadPacket(Eigen::Index) const {
    return Eigen::internal::pset1<Packet>(T(0));
  }
  template <typename Packet>
  void storePacket(Eigen::Index i, const Packet& p) const {
    Eigen::internal::pstoreu<T>(data_ + i, p);
  }

 private:
  T* data_;
};

template <typename T>
class FreshResult {
 public:
  using LinearMapper = FreshLinearResult<T>;
  // The target of the kernel's scalar tail, `res(i, j) += x`: stores 0 + x.
  struct Element {
    T* p;
    void operator+=(T x) const { *p = T(0) + x; }
  };
  FreshResult(T* data, Eigen::Index stride) : data_(data), stride_(stride) {}
  FreshResult getSubMapper(Eigen::Index i, Eigen::Index j) const { return {at(i, j), stride_}; }
  LinearMapper getLinearMapper(Eigen::Index i, Eigen::Index j) const {
    return LinearMapper(at(i, j));
  }
  Element operator()(Eigen::Index i, Eigen::Index j) const { return {at(i, j)}; }
  template <typename Packet>
  Packet loadPacket(Eigen::Index, Eigen::Index) const {
    return Eigen::internal::pset1<Packet>(T(0));
  }
  template <typename Packet>
  Packet gatherPacket(Eigen::Index, Eigen::Index) const {
    return Eigen::internal::pset1<Packet>(T(0));
  }
  template <typename Packet>
  void scatterPacket(Eigen::Index i, Eigen::Index j, const Packet& p) const {
    Eigen::internal::pscatter<T, Packet>(at(i, j), p, stride_);
  }
  Eigen::Index stride() const { return stride_; }

 private:
  T* at(Eigen::Index i, Eigen::Index j) const { return data_ + i + j * stride_; }  // column-major
  T* data_;
  Eigen::Index stride_;
};

// Calls fn(integral_constant<B's order>, integral_constant<A's order>) with the storage orders
// of op(B)^T and op(A)^T in Eigen's column-major view.
template <typename Fn>
void with_storage_orders(const MatmulShape& s, const Fn& fn) {
  using ColMajor = std::integral_constant<int, Eigen::ColMajor>;
  using RowMajor = std::integral_constant<int, Eigen::RowMajor>;
  if (!s.trans_a && !s.trans_b) fn(ColMajor(), ColMajor());
  if (!s.trans_a && s.trans_b) fn(RowMajor(), ColMajor());
  if (s.trans_a && !s.trans_b) fn(ColMajor(), RowMajor());
  if (s.trans_a && s.trans_b) fn(RowMajor(), RowMajor());
}

// This file's own, not std::min: each copy defines only its own symbols (see the top).
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }

// op(B) is packed in blocks of kc x nc (depth x columns of C), depth-major, each block's column
// panels one after another. gebp loads them with aligned loads, so every block starts on a
// multiple of 16 elements (64 bytes or more): the block at (k0, n0) starts at
// k0 / kc * depth_stride + n0 / nc * block_columns * depth, with nc rounded up to block_columns.
// A block packs in pieces of whole register panels (mr columns of C, a whole number of packets),
// about four per block, so that the threads share the packing; each piece lands where packing
// its block at once would put it.
template <typename T>
MatmulBlocking matmul_blocking(const MatmulShape& s) {
  Eigen::Index kc = s.k(), nc = s.n(), mc = s.m();
  Eigen::internal::computeProductBlockingSizes<T, T, 1>(kc, nc, mc, Eigen::Index(1));
  const int64_t mr = Traits<T>::mr;
  const int64_t piece = ceil_div(ceil_div(nc, 4), mr) * mr;
  const int64_t depth_blocks = ceil_div(s.k(), kc), column_blocks = ceil_div(s.n(), nc);
  const int64_t block_columns = ceil_div(nc, 16) * 16;
  const int64_t depth_stride = column_blocks * block_columns * kc;
  return {kc,
          nc,
          piece,
          depth_blocks * column_blocks * ceil_div(nc, piece),
          block_columns,
          depth_stride,
          depth_blocks * depth_stride,
          Traits<T>::nr};
}

// Where the block of op(B) at (k0, n0) starts in the packing, for `depth` = its kc or less.
int64_t packed_block(const MatmulBlocking& blocking, int64_t k0, int64_t n0, int64_t depth) {
  return k0 / blocking.kc * blocking.depth_stride +
         n0 / blocking.nc * blocking.block_columns * depth;
}

template <typename T>
void matmul_pack_b(const T* b, const MatmulShape& s, const MatmulBlocking& blocking, int64_t index,
                   T* packed) {
  const int64_t n = s.n(), k = s.k();
  const int64_t per_block = ceil_div(blocking.nc, blocking.piece);
  const int64_t per_depth = ceil_div(n, blocking.nc) * per_block;
  const int64_t k0 = index / per_depth * blocking.kc;
  const int64_t block_n0 = index % per_depth / per_block * blocking.nc;
  const int64_t n0 = block_n0 + index % per_block * blocking.piece;
  const int64_t columns = min(blocking.piece, min(block_n0 + blocking.nc, n) - n0);
  if (columns <= 0) return;  // past the end of the last, narrower block
  const int64_t depth = min(blocking.kc, k - k0);
  with_storage_orders(s, [&](auto b_order, auto) {
    constexpr int Order = decltype(b_order)::value;
    using Mapper = ConstBlasMapper<T, Order>;
    Eigen::internal::gemm_pack_lhs<T, Eigen::Index, Mapper, Traits<T>::mr, Traits<T>::LhsProgress,
                                   typename Traits<T>::LhsPacket4Packing, Order>
        pack;
    const Mapper op_b_t(b, s.b_cols);
    pack(packed + packed_block(blocking, k0, block_n0, depth) + (n0 - block_n0) * depth,
         op_b_t.getSubMapper(n0, k0), depth, columns);
  });
}

// C's rows [r0, r0 + rows) start as the bias rows, or zeros: the GEMM accumulates into C, and
// starting from the bias saves a pass over C.
template <typename T>
void start_rows(const T* bias, T* out, int64_t n, int64_t r0, int64_t rows) {
  MatMap<T> c(out + r0 * n, rows, n);
  if (bias) {
    const Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> row(bias, n);
    for (int64_t r = 0; r < rows; ++r) c.row(r) = row;
  } else {
    c.setZero();
  }
}

template <typename T, typename Result>
using Gebp = Eigen::internal::gebp_kernel<T, T, Eigen::Index, Result, Traits<T>::mr, Traits<T>::nr,
                                          false, false>;

template <typename T>
void matmul_rows_packed(const T* a, const T* packed_b, const T* bias, T* out, const MatmulShape& s,
                        const MatmulBlocking& blocking, int64_t r0, int64_t rows) {
  const int64_t n = s.n(), k = s.k();
  // C starts as the bias rows; without a bias the first depth block writes C (Note [Products
  // written, not accumulated]), so C needs no zeros unless there is no depth at all.
  if (bias || k == 0) start_rows(bias, out, n, r0, rows);
  with_storage_orders(s, [&](auto, auto a_order) {
    constexpr int Order = decltype(a_order)::value;
    using Mapper = ConstBlasMapper<T, Order>;
    Eigen::internal::gemm_pack_rhs<T, Eigen::Index, Mapper, Traits<T>::nr, Order> pack;
    const Mapper op_a_t(a, s.a_cols);
    const ResultMapper<T> c_t(out, n, 1);
    const FreshResult<T> fresh_c_t(out, n);
    T* block =
        static_cast<T*>(Eigen::internal::aligned_malloc(sizeof(T) * min(blocking.kc, k) * rows));
    for (int64_t k0 = 0; k0 < k; k0 += blocking.kc) {
      const int64_t depth = min(blocking.kc, k - k0);
      pack(block, op_a_t.getSubMapper(k0, r0), depth, rows);
      for (int64_t n0 = 0; n0 < n; n0 += blocking.nc) {
        const int64_t columns = min(blocking.nc, n - n0);
        auto gebp = [&](const auto& c) {
          Gebp<T, std::decay_t<decltype(c)>>()(c.getSubMapper(n0, r0),
                                               packed_b + packed_block(blocking, k0, n0, depth),
                                               block, columns, depth, rows, T(1));
        };
        if (k0 == 0 && !bias) {
          gebp(fresh_c_t);
        } else {
          gebp(c_t);
        }
      }
    }
    Eigen::internal::aligned_free(block);
  });
}

template <typename T>
void matmul_rows(const T* a, const T* b, const T* bias, T* out, const MatmulShape& s, int64_t r0,
                 int64_t rows) {
  ConstMatMap<T> A(a, s.a_rows, s.a_cols);
  ConstMatMap<T> B(b, s.b_rows, s.b_cols);
  MatMap<T> C(out, s.m(), s.n());
  auto c = C.middleRows(r0, rows);
  start_rows(bias, out, s.n(), r0, rows);
  const bool ta = s.trans_a, tb = s.trans_b;
  if (!ta && !tb) c.noalias() += A.middleRows(r0, rows) * B;
  if (!ta && tb) c.noalias() += A.middleRows(r0, rows) * B.transpose();
  if (ta && !tb) c.noalias() += A.transpose().middleRows(r0, rows) * B;
  if (ta && tb) c.noalias() += A.transpose().middleRows(r0, rows) * B.transpose();
}

template <typename T>
constexpr CpuKernelsFor<T> table() {
  return {&binary<T>,
          &binary_scalar<T>,
          &scaled_product<T>,
          &unary<T>,
          &fill<T>,
          &dropout_mask<T>,
          &sum<T>,
          &column_sum<T>,
          &matmul_rows<T>,
          &matmul_blocking<T>,
          &matmul_pack_b<T>,
          &matmul_rows_packed<T>};
}

constexpr CpuKernels kKernels = {table<float>(), table<double>()};

}  // namespace

const CpuKernels& kernels() { return kKernels; }

}  // namespace ag::ops::AG_CPU_NAMESPACE
