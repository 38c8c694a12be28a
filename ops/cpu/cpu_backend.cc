// The CPU kernels, on Eigen. Contiguous inputs are mapped, never copied.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/error.h"
#include "ops/backend.h"
#include "ops/counter_rng.h"
#include "ops/cpu/parallel.h"
#include "ops/strided_loop.h"

namespace ag::ops {
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

template <typename T>
InVec<T> vec(const Tensor& t) {
  return {t.data<T>(), t.numel()};
}
template <typename T>
OutVec<T> out_vec(const Tensor& t) {
  return {t.data<T>(), t.numel()};
}

template <typename T>
T apply_binary(BinaryKind kind, T x, T y) {
  switch (kind) {
    case BinaryKind::kAdd:
      return x + y;
    case BinaryKind::kSub:
      return x - y;
    case BinaryKind::kMul:
      return x * y;
    case BinaryKind::kDiv:
      return x / y;
    case BinaryKind::kPow:
      return std::pow(x, y);
    case BinaryKind::kThreshold:
      return y > T(0) ? x : T(0);
  }
  return T(0);
}

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
}  // namespace ag::ops

template <typename T>
struct Eigen::internal::functor_traits<ag::ops::ThresholdOp<T>> {
  enum { Cost = 2, PacketAccess = packet_traits<T>::HasCmp };
};

namespace ag::ops {
namespace {

// out = a (kind) b over whole arrays, vectorized by Eigen.
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
  }
}

// for_blocks' large case: a few large blocks on parallel_for (elementwise work is memory-bound;
// two cores still help). Out of line, so that small ops do not set up its std::function.
template <typename Fn>
[[gnu::noinline]] void for_blocks_in_parallel(int64_t n, const Fn& fn) {
  const int64_t blocks = parallel_threads();
  if (blocks == 1) {
    fn(int64_t{0}, n);
    return;
  }
  parallel_for(blocks, [&](int64_t i) {
    const int64_t begin = n * i / blocks / 16 * 16,
                  end = i + 1 == blocks ? n : n * (i + 1) / blocks / 16 * 16;
    fn(begin, end - begin);
  });
}
// Calls fn(begin, length) over [0, n): once when n is small, else in parallel blocks.
template <typename Fn>
void for_blocks(int64_t n, const Fn& fn) {
  constexpr int64_t kParallelElements = int64_t{1} << 16;
  if (n < kParallelElements) {
    fn(int64_t{0}, n);
  } else {
    for_blocks_in_parallel(n, fn);
  }
}

// Calls fn(std::integral_constant<int, A>) with A = Eigen::Aligned64 when every pointer is 64-byte
// aligned, as fresh tensors always are (Note [Data block alignment], engine/allocator.cc), else
// with Eigen::Unaligned. Aligned maps spare Eigen its run-time peeling to an aligned start,
// about 2 ns of a 1000-element op. (Parallel blocks start at multiples of 16 elements, so they
// stay aligned.)
template <typename Fn>
void with_alignment(std::initializer_list<const void*> pointers, const Fn& fn) {
  uintptr_t bits = 0;
  for (const void* p : pointers) bits |= reinterpret_cast<uintptr_t>(p);
  if (bits % 64 == 0) {
    fn(std::integral_constant<int, Eigen::Aligned64>());
  } else {
    fn(std::integral_constant<int, Eigen::Unaligned>());
  }
}

// One flat layout (the common case): one vectorized pass, split over the pool when large. Kept
// apart from the broadcasting path below, whose stack frame and set-up every small op would
// otherwise pay for.
template <typename T>
void binary_flat(BinaryKind kind, const T* pa, const T* pb, T* po, int64_t numel) {
  with_alignment({pa, pb, po}, [&](auto align) {
    constexpr int A = decltype(align)::value;
    for_blocks(numel, [=](int64_t begin, int64_t n) {
      eigen_binary<T>(kind, InVec<T, A>(pa + begin, n), InVec<T, A>(pb + begin, n),
                      OutVec<T, A>(po + begin, n));
    });
  });
}

template <typename T>
[[gnu::noinline]] void binary_broadcast(BinaryKind kind, const Tensor& a, const Tensor& b,
                                        const Tensor& out) {
  const Shape& shape = out.shape();
  if (a.shape() == shape && b.numel() == 1) {
    T s = b.data<T>()[0];
    eigen_binary<T>(kind, vec<T>(a), Eigen::Array<T, Eigen::Dynamic, 1>::Constant(a.numel(), s),
                    out_vec<T>(out));
    return;
  }
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  std::array<std::vector<int64_t>, 3> strides = {broadcast_strides(a.shape(), shape),
                                                 broadcast_strides(b.shape(), shape),
                                                 contiguous_strides(shape)};
  for_each_run<3>(shape, strides, [&](auto off, int64_t n, auto inc) {
    for (int64_t i = 0; i < n; ++i) {
      po[off[2] + i * inc[2]] =
          apply_binary(kind, pa[off[0] + i * inc[0]], pb[off[1] + i * inc[1]]);
    }
  });
}

// a and b broadcast to out's shape. When both have as many elements as out, neither was
// expanded (a broadcast that keeps the element count only adds or drops size-1 dims), so all
// three share one flat layout: the common case, told apart without comparing shapes.
template <typename T>
void binary_impl(BinaryKind kind, const Tensor& a, const Tensor& b, const Tensor& out) {
  if (a.numel() == out.numel() && b.numel() == out.numel()) {
    binary_flat<T>(kind, a.data<T>(), b.data<T>(), out.data<T>(), out.numel());
  } else {
    binary_broadcast<T>(kind, a, b, out);
  }
}

template <typename T, int A>
void unary_block(UnaryKind kind, const T* in, T* out, int64_t n, double scalar) {
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
void unary_impl(UnaryKind kind, const Tensor& a, double scalar, const Tensor& out) {
  const T* x = a.data<T>();
  T* y = out.data<T>();
  with_alignment({x, y}, [&](auto align) {
    for_blocks(out.numel(), [&](int64_t begin, int64_t n) {
      unary_block<T, decltype(align)::value>(kind, x + begin, y + begin, n, scalar);
    });
  });
}

template <typename T>
void sum_to_impl(const Tensor& a, const Tensor& out) {
  const Shape& in_shape = a.shape();
  const T* pa = a.data<T>();
  T* po = out.data<T>();
  std::memset(static_cast<void*>(po), 0, out.nbytes());
  // [N, C] -> [C] or [1, C] (bias gradients) is the hot case: a column sum. The check is on the
  // shape, not the element count: [N, N] -> [N, 1] is a row sum.
  const Shape& to = out.shape();
  if (in_shape.size() == 2 && in_shape[1] > 1 &&
      (to == Shape{in_shape[1]} || to == Shape{1, in_shape[1]})) {
    Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(po, in_shape[1]) =
        ConstMatMap<T>(pa, in_shape[0], in_shape[1]).colwise().sum();
    return;
  }
  std::array<std::vector<int64_t>, 2> strides = {contiguous_strides(in_shape),
                                                 broadcast_strides(out.shape(), in_shape)};
  for_each_run<2>(in_shape, strides, [&](auto off, int64_t n, auto inc) {
    if (inc[1] == 0) {
      T acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += pa[off[0] + i];
      po[off[1]] += acc;
    } else {
      for (int64_t i = 0; i < n; ++i) po[off[1] + i] += pa[off[0] + i];
    }
  });
}

template <typename T>
void copy_strided(const Tensor& src, const std::vector<int64_t>& src_strides, const Tensor& dst) {
  const T* ps = src.data<T>();
  T* pd = dst.data<T>();
  std::array<std::vector<int64_t>, 2> strides = {src_strides, contiguous_strides(dst.shape())};
  for_each_run<2>(dst.shape(), strides, [&](auto off, int64_t n, auto inc) {
    for (int64_t i = 0; i < n; ++i) pd[off[1] + i] = ps[off[0] + i * inc[0]];
  });
}

// C = op(A) op(B) (+ bias) for one matrix, over rows [r0, r0 + rows) of C.
template <typename T>
void matmul_rows(const ConstMatMap<T>& A, const ConstMatMap<T>& B, bool ta, bool tb,
                 const Tensor* bias, MatMap<T>& C, int64_t r0, int64_t rows) {
  auto c = C.middleRows(r0, rows);
  // Eigen's GEMM accumulates into C, so `c = A B` first zeroes C. With a bias, C starts as the
  // bias rows instead and the product is added on: one pass over C fewer.
  if (bias) {
    const Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> row(bias->data<T>(), C.cols());
    for (int64_t r = 0; r < rows; ++r) c.row(r) = row;
  } else {
    c.setZero();
  }
  if (!ta && !tb) c.noalias() += A.middleRows(r0, rows) * B;
  if (!ta && tb) c.noalias() += A.middleRows(r0, rows) * B.transpose();
  if (ta && !tb) c.noalias() += A.transpose().middleRows(r0, rows) * B;
  if (ta && tb) c.noalias() += A.transpose().middleRows(r0, rows) * B.transpose();
}

// Large products are split into row blocks (or batches) run by parallel_for; small ones stay on
// the calling thread, where the split would cost more than it saves.
template <typename T>
void matmul_impl(const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor* bias,
                 const Tensor& out) {
  const bool batched = a.dim() == 3;
  const int64_t batch = batched ? a.shape()[0] : 1;
  const int64_t ar = a.shape()[a.dim() - 2], ac = a.shape()[a.dim() - 1];
  const int64_t br = b.shape()[b.dim() - 2], bc = b.shape()[b.dim() - 1];
  const int64_t m = out.shape()[out.dim() - 2], n = out.shape()[out.dim() - 1];
  const int64_t k = ta ? ar : ac;
  auto matrix = [&](int64_t i, int64_t r0, int64_t rows) {
    ConstMatMap<T> A(a.data<T>() + i * ar * ac, ar, ac);
    ConstMatMap<T> B(b.data<T>() + i * br * bc, br, bc);
    MatMap<T> C(out.data<T>() + i * m * n, m, n);
    matmul_rows<T>(A, B, ta, tb, bias, C, r0, rows);
  };
  constexpr int64_t kParallelWork = int64_t{1} << 20;  // multiply-adds
  const int64_t threads = parallel_threads();
  if (threads == 1 || batch * m * n * k < kParallelWork) {
    for (int64_t i = 0; i < batch; ++i) matrix(i, 0, m);
  } else if (batch >= threads) {
    parallel_for(batch, [&](int64_t i) { matrix(i, 0, m); });
  } else {
    const int64_t blocks = std::min<int64_t>(threads, std::max<int64_t>(1, m / 16));
    for (int64_t i = 0; i < batch; ++i) {
      parallel_for(blocks, [&](int64_t blk) {
        const int64_t r0 = m * blk / blocks, r1 = m * (blk + 1) / blocks;
        matrix(i, r0, r1 - r0);
      });
    }
  }
}

template <typename T>
void log_softmax_impl(const Tensor& a, int64_t dim, const Tensor& out) {
  const Shape& s = a.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= s[d];
  for (size_t d = dim + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t len = s[dim];
  const T* pa = a.data<T>();
  T* po = out.data<T>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      const T* x = pa + o * len * inner + in;
      T* y = po + o * len * inner + in;
      T mx = x[0];
      for (int64_t k = 1; k < len; ++k) mx = std::max(mx, x[k * inner]);
      T total = 0;
      for (int64_t k = 0; k < len; ++k) total += std::exp(x[k * inner] - mx);
      const T lse = mx + std::log(total);
      for (int64_t k = 0; k < len; ++k) y[k * inner] = x[k * inner] - lse;
    }
  }
}

// An optimized build targets AVX-512 (engine/copts.bzl): say so clearly on a CPU without it,
// instead of dying on an illegal instruction.
void check_instruction_set() {
#ifdef __AVX512F__
  AG_CHECK(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl"),
           "this build of the CPU kernels uses AVX-512, which this CPU lacks; rebuild with "
           "--define=ag_isa=avx2");
#endif
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() { check_instruction_set(); }
  Tensor binary(BinaryKind kind, const Tensor& a, const Tensor& b, const Shape& shape) override {
    Tensor out = Tensor::empty(shape, a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) { binary_impl<decltype(z)>(kind, a, b, out); });
    return out;
  }
  void binary_inplace(BinaryKind kind, const Tensor& a, const Tensor& b) override {
    dispatch_dtype(a.dtype(), [&](auto z) { binary_impl<decltype(z)>(kind, a, b, a); });
  }
  Tensor unary(UnaryKind kind, const Tensor& a, double scalar) override {
    Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) { unary_impl<decltype(z)>(kind, a, scalar, out); });
    return out;
  }
  Tensor fill(const Shape& shape, double value, DType dtype, Device device) override {
    Tensor out = Tensor::empty(shape, dtype, device);
    dispatch_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      T* po = out.data<T>();
      for_blocks(out.numel(), [&](int64_t begin, int64_t n) {
        OutVec<T>(po + begin, n).setConstant(static_cast<T>(value));
      });
    });
    return out;
  }
  void copy(const Tensor& dst, const Tensor& src) override {
    if (src.numel() == dst.numel()) {
      std::memcpy(dst.raw_data(), src.raw_data(), dst.nbytes());
      return;
    }
    strided_copy(src, broadcast_strides(src.shape(), dst.shape()), dst);
  }
  Tensor sum_all(const Tensor& a) override {
    Tensor out = Tensor::empty({}, a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      out.data<T>()[0] = vec<T>(a).sum();
    });
    return out;
  }
  Tensor sum_to(const Tensor& a, const Shape& shape) override {
    Tensor out = Tensor::empty(shape, a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) { sum_to_impl<decltype(z)>(a, out); });
    return out;
  }
  void strided_copy(const Tensor& src, const std::vector<int64_t>& src_strides,
                    const Tensor& dst) override {
    dispatch_dtype(dst.dtype(), [&](auto z) { copy_strided<decltype(z)>(src, src_strides, dst); });
  }
  Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor* bias) override {
    const int64_t r = a.dim() - 2, c = a.dim() - 1;
    Shape shape = a.shape();
    shape[r] = ta ? a.shape()[c] : a.shape()[r];
    shape[c] = tb ? b.shape()[b.dim() - 2] : b.shape()[b.dim() - 1];
    Tensor out = Tensor::empty(shape, a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) { matmul_impl<decltype(z)>(a, b, ta, tb, bias, out); });
    return out;
  }
  Tensor log_softmax(const Tensor& a, int64_t dim) override {
    Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) { log_softmax_impl<decltype(z)>(a, dim, out); });
    return out;
  }
  Tensor gather_rows(const Tensor& a, const std::vector<int64_t>& targets) override {
    const int64_t rows = a.shape()[0], cols = a.shape()[1];
    Tensor out = Tensor::empty({rows}, a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      for (int64_t r = 0; r < rows; ++r) out.data<T>()[r] = a.data<T>()[r * cols + targets[r]];
    });
    return out;
  }
  Tensor nll_grad_pattern(const Shape& shape, const std::vector<int64_t>& targets, double scale,
                          DType dtype, Device device) override {
    Tensor out = fill(shape, 0.0, dtype, device);
    dispatch_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      for (size_t row = 0; row < targets.size(); ++row) {
        out.data<T>()[row * shape[1] + targets[row]] = static_cast<T>(-scale);
      }
    });
    return out;
  }
  Tensor dropout_mask(const Shape& shape, double keep_prob, uint64_t seed, DType dtype,
                      Device device) override {
    Tensor out = Tensor::empty(shape, dtype, device);
    dispatch_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      T* p = out.data<T>();
      const T keep = static_cast<T>(1.0 / keep_prob);
      for (int64_t i = 0; i < out.numel(); ++i) {
        p[i] = uniform_from_counter(seed, static_cast<uint64_t>(i)) < keep_prob ? keep : T(0);
      }
    });
    return out;
  }
};

}  // namespace

Backend* cpu_backend() {
  static CpuBackend cpu;
  return &cpu;
}

void fail_no_backend(const Device& device) {
  fail("no kernels for device ", to_string(device), ": this build was made without support for it");
}

void register_backend(DeviceType type, Backend* backend) { detail::backends.set(type, backend); }

}  // namespace ag::ops
