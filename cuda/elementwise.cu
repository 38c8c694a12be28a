// Elementwise kernels: fill, binary ops with broadcasting, unary ops, strided copies. Each element
// is computed by its kind's rule in the op list (ops/scalar_rules.h, Note [The op list]).
#include "cuda/check.h"
#include "cuda/kernels.h"
#include "cuda/launch.h"
#include "ops/scalar_rules.h"

namespace ag::cuda {
namespace {

using ops::apply_binary;
using ops::apply_unary;

template <typename T>
__global__ void fill_kernel(T* out, int64_t n, T value) {
  AG_GRID_STRIDE_LOOP(i, n) { out[i] = value; }
}

template <typename T>
__global__ void binary_contiguous_kernel(BinaryOp op, const T* a, const T* b, T* out, int64_t n) {
  AG_GRID_STRIDE_LOOP(i, n) { out[i] = apply_binary(op, a[i], b[i]); }
}

template <typename T, typename Index>
__global__ void binary_strided_kernel(BinaryOp op, const T* a, const T* b, T* out, int64_t n,
                                      Layout l) {
  AG_GRID_STRIDE_LOOP(i, n) {
    const Index idx = static_cast<Index>(i);
    out[i] = apply_binary(op, a[input_offset(l, 0, idx)], b[input_offset(l, 1, idx)]);
  }
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* a, T* out, int64_t n, T scalar) {
  AG_GRID_STRIDE_LOOP(i, n) { out[i] = apply_unary(op, a[i], scalar); }
}

template <typename T, typename Index>
__global__ void strided_copy_kernel(const T* src, T* dst, int64_t n, Layout l) {
  AG_GRID_STRIDE_LOOP(i, n) { dst[i] = src[input_offset(l, 0, static_cast<Index>(i))]; }
}

bool fits_32_bits(int64_t n) { return n < (int64_t{1} << 31); }

}  // namespace

template <typename T>
void fill(T* out, int64_t n, T value) {
  if (n == 0) return;
  fill_kernel<<<blocks_for(n), kThreads>>>(out, n, value);
  check_launch("fill");
}

template <typename T>
void binary(BinaryOp op, const T* a, const T* b, T* out, int64_t n, const Layout* layout) {
  if (n == 0) return;
  if (layout == nullptr) {
    binary_contiguous_kernel<<<blocks_for(n), kThreads>>>(op, a, b, out, n);
  } else if (fits_32_bits(n)) {
    binary_strided_kernel<T, uint32_t><<<blocks_for(n), kThreads>>>(op, a, b, out, n, *layout);
  } else {
    binary_strided_kernel<T, int64_t><<<blocks_for(n), kThreads>>>(op, a, b, out, n, *layout);
  }
  check_launch("binary");
}

template <typename T>
void unary(UnaryOp op, const T* a, T* out, int64_t n, T scalar) {
  if (n == 0) return;
  unary_kernel<<<blocks_for(n), kThreads>>>(op, a, out, n, scalar);
  check_launch("unary");
}

template <typename T>
void strided_copy(const T* src, T* dst, int64_t n, const Layout& layout) {
  if (n == 0) return;
  if (fits_32_bits(n)) {
    strided_copy_kernel<T, uint32_t><<<blocks_for(n), kThreads>>>(src, dst, n, layout);
  } else {
    strided_copy_kernel<T, int64_t><<<blocks_for(n), kThreads>>>(src, dst, n, layout);
  }
  check_launch("strided_copy");
}

#define AG_INSTANTIATE(T)                                                            \
  template void fill<T>(T*, int64_t, T);                                             \
  template void binary<T>(BinaryOp, const T*, const T*, T*, int64_t, const Layout*); \
  template void unary<T>(UnaryOp, const T*, T*, int64_t, T);                         \
  template void strided_copy<T>(const T*, T*, int64_t, const Layout&);
AG_INSTANTIATE(float)
AG_INSTANTIATE(double)
#undef AG_INSTANTIATE

}  // namespace ag::cuda
