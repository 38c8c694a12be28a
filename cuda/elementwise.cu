// Elementwise kernels: fill, binary ops with broadcasting, unary ops, the fused scaled product,
// strided copies. Each element is computed by its kind's rule in the op list
// (ops/scalar_rules.h, Note [The op list]).
#include <cstdint>

#include "cuda/check.h"
#include "cuda/kernels.h"
#include "cuda/launch.h"
#include "cuda/stream.h"
#include "ops/scalar_rules.h"

namespace ag::cuda {
namespace {

using ops::apply_binary;
using ops::apply_unary;

// Note [Vectorized elementwise kernels]
// A contiguous elementwise kernel is bound by memory bandwidth, and a GPU moves memory fastest in
// 16-byte accesses: each thread loads 16 bytes of every input (4 floats, 2 doubles) as one
// Pack, computes them element by element and stores one Pack. That needs every pointer 16-byte
// aligned, which the caching allocator's blocks are; a tensor that starts elsewhere in its
// storage (a view with an offset) takes the one-element path, kVec = 1. The last n % kVec
// elements are done one by one after the packs.
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) Pack {
  T v[kVec];
};

template <typename T>
constexpr int kVecOf = 16 / sizeof(T);

// result.v[j] = fn(packs.v[j]...) for every j.
template <typename Fn, typename P, typename... Packs>
__device__ __forceinline__ void apply_packs(const Fn& fn, P& result, const Packs&... packs) {
#pragma unroll
  for (int j = 0; j < static_cast<int>(sizeof(result.v) / sizeof(result.v[0])); ++j) {
    result.v[j] = fn(packs.v[j]...);
  }
}

// out[i] = fn(in[i]...) for i in [0, n): every pointer contiguous and, for kVec > 1, 16-byte
// aligned. out may be one of the inputs (in-place ops): each Pack is read before it is written.
template <typename T, int kVec, typename Fn, typename... In>
__global__ void pointwise_kernel(Fn fn, T* out, int64_t n, const In*... in) {
  using P = Pack<T, kVec>;
  const int64_t packs = n / kVec;
  AG_GRID_STRIDE_LOOP(p, packs) {
    P result;
    apply_packs(fn, result, reinterpret_cast<const P*>(in)[p]...);
    reinterpret_cast<P*>(out)[p] = result;
  }
  const int64_t tail = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tail < n - packs * kVec) {
    const int64_t i = packs * kVec + tail;
    out[i] = fn(in[i]...);
  }
}

template <typename T>
struct FillFn {
  T value;
  __device__ T operator()() const { return value; }
};

template <typename T>
struct UnaryFn {
  UnaryOp op;
  T scalar;
  __device__ T operator()(T x) const { return apply_unary(op, x, scalar); }
};

template <typename T>
struct BinaryFn {
  BinaryOp op;
  __device__ T operator()(T x, T y) const { return apply_binary(op, x, y); }
};

// a * ((b * scale) * c): the three kernels it fuses, in their order (Note [Fused formula kernels]
// in ops/elementwise.cc), so the same bits.
template <typename T>
struct ScaledProductFn {
  T scale;
  __device__ T operator()(T a, T b, T c) const { return a * ((b * scale) * c); }
};

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename... Ptr>
bool all_aligned(const Ptr*... p) {
  return (aligned(p) && ...);
}

// Launches pointwise_kernel over n elements, 16 bytes at a time where the pointers allow.
template <typename T, typename Fn, typename... In>
void pointwise(const char* what, Fn fn, T* out, int64_t n, const In*... in) {
  if (n == 0) return;
  constexpr int kVec = kVecOf<T>;
  if (all_aligned(out, in...)) {
    pointwise_kernel<T, kVec><<<blocks_for(n, kVec), kThreads, 0, stream()>>>(fn, out, n, in...);
  } else {
    pointwise_kernel<T, 1><<<blocks_for(n), kThreads, 0, stream()>>>(fn, out, n, in...);
  }
  check_launch(what);
}

template <typename T, typename Index>
__global__ void binary_strided_kernel(BinaryOp op, const T* a, const T* b, T* out, int64_t n,
                                      Layout l) {
  AG_GRID_STRIDE_LOOP(i, n) {
    const Index idx = static_cast<Index>(i);
    out[i] = apply_binary(op, a[input_offset(l, 0, idx)], b[input_offset(l, 1, idx)]);
  }
}

template <typename T, typename Index>
__global__ void strided_copy_kernel(const T* src, T* dst, int64_t n, Layout l) {
  AG_GRID_STRIDE_LOOP(i, n) { dst[i] = src[input_offset(l, 0, static_cast<Index>(i))]; }
}

bool fits_32_bits(int64_t n) { return n < (int64_t{1} << 31); }

}  // namespace

template <typename T>
void fill(T* out, int64_t n, T value) {
  pointwise("fill", FillFn<T>{value}, out, n);
}

template <typename T>
void binary(BinaryOp op, const T* a, const T* b, T* out, int64_t n, const Layout* layout) {
  if (layout == nullptr) return pointwise("binary", BinaryFn<T>{op}, out, n, a, b);
  if (n == 0) return;
  if (fits_32_bits(n)) {
    binary_strided_kernel<T, uint32_t>
        <<<blocks_for(n), kThreads, 0, stream()>>>(op, a, b, out, n, *layout);
  } else {
    binary_strided_kernel<T, int64_t>
        <<<blocks_for(n), kThreads, 0, stream()>>>(op, a, b, out, n, *layout);
  }
  check_launch("binary");
}

template <typename T>
void unary(UnaryOp op, const T* a, T* out, int64_t n, T scalar) {
  pointwise("unary", UnaryFn<T>{op, scalar}, out, n, a);
}

template <typename T>
void scaled_product(const T* a, const T* b, const T* c, T* out, int64_t n, T scale) {
  pointwise("scaled_product", ScaledProductFn<T>{scale}, out, n, a, b, c);
}

template <typename T>
void strided_copy(const T* src, T* dst, int64_t n, const Layout& layout) {
  if (n == 0) return;
  if (fits_32_bits(n)) {
    strided_copy_kernel<T, uint32_t><<<blocks_for(n), kThreads, 0, stream()>>>(src, dst, n, layout);
  } else {
    strided_copy_kernel<T, int64_t><<<blocks_for(n), kThreads, 0, stream()>>>(src, dst, n, layout);
  }
  check_launch("strided_copy");
}

#define AG_INSTANTIATE(T)                                                            \
  template void fill<T>(T*, int64_t, T);                                             \
  template void binary<T>(BinaryOp, const T*, const T*, T*, int64_t, const Layout*); \
  template void unary<T>(UnaryOp, const T*, T*, int64_t, T);                         \
  template void scaled_product<T>(const T*, const T*, const T*, T*, int64_t, T);     \
  template void strided_copy<T>(const T*, T*, int64_t, const Layout&);
AG_INSTANTIATE(float)
AG_INSTANTIATE(double)
#undef AG_INSTANTIATE

}  // namespace ag::cuda
