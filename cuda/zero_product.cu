// Products with an operand of zeros, written without multiplying (Note [Known zeros],
// engine/memory/storage.h; Note [Products with a zero operand], ops/cpu/zero_operand.h).
//
// Every element of C = op(A) op(B) is a sum of k products. When op(A) holds only +0 and NaN:
// if row i of op(A) holds a NaN, C[i][j] is NaN; otherwise every product has a +0 factor, and is
// +0 or -0 when the other factor is finite (their sum, started from +0, is +0) and NaN when it is
// an Inf or a NaN (0 * Inf = NaN). So C[i][j] is NaN exactly when row i of op(A) or column j of
// op(B) holds an Inf or NaN, and +0 otherwise; the same with the roles swapped when op(B) is the
// operand of zeros. Two passes: flag the rows and columns while reading each operand once
// (an operand known to be all +0 is not read), then write C. The GEMM's epilogue adds the bias
// to the sum, bias + (+0), which turns a -0 bias into +0; so does this.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/check.h"
#include "cuda/kernels.h"
#include "cuda/launch.h"
#include "cuda/stream.h"

namespace ag::cuda {
namespace {

template <typename T>
__device__ T quiet_nan();
template <>
__device__ float quiet_nan<float>() {
  return __int_as_float(0x7fffffff);  // the NaN the GPU's arithmetic returns
}
template <>
__device__ double quiet_nan<double>() {
  return __longlong_as_double(0x7fffffffffffffffLL);
}

// One operand as stored: `batch` matrices of rows x ld elements, `stride` apart. A line of the
// product is a stored row (line_is_row) or a stored column.
struct Lines {
  int64_t rows, ld, stride, count;
  bool line_is_row;
};

// Flags every line that holds an Inf or NaN. Threads walk the stored matrix in a 2-D grid, kVec
// elements of a row at a time (x along a row, so reads are coalesced; no index division), batch
// by batch.
template <typename T, int kVec>
__global__ void flag_nonfinite_kernel(const T* x, int64_t batch, Lines l, unsigned char* flags) {
  struct alignas(sizeof(T) * kVec) Pack {
    T v[kVec];
  };
  const int64_t packs = l.ld / kVec;
  for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
    for (int64_t r = blockIdx.y * blockDim.y + threadIdx.y; r < l.rows;
         r += static_cast<int64_t>(gridDim.y) * blockDim.y) {
      const Pack* row = reinterpret_cast<const Pack*>(x + z * l.stride + r * l.ld);
      for (int64_t p = blockIdx.x * blockDim.x + threadIdx.x; p < packs;
           p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const Pack in = row[p];
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          if (!isfinite(in.v[j])) flags[z * l.count + (l.line_is_row ? r : p * kVec + j)] = 1;
        }
      }
    }
  }
}

// C [batch, m, n] (contiguous) = bias[j] + (row_flags[i] or col_flags[j] ? NaN : +0), kVec
// columns at a time (kVec divides n, and C and bias are aligned for it).
template <typename T, int kVec>
__global__ void write_zero_product_kernel(T* c, int64_t batch, int64_t m, int64_t n,
                                          const unsigned char* row_flags,
                                          const unsigned char* col_flags, const T* bias) {
  struct alignas(sizeof(T) * kVec) Pack {
    T v[kVec];
  };
  const int64_t packs = n / kVec;
  for (int64_t row = blockIdx.y * blockDim.y + threadIdx.y; row < batch * m;
       row += static_cast<int64_t>(gridDim.y) * blockDim.y) {
    const bool row_nan = row_flags[row];
    const unsigned char* cols = col_flags + row / m * n;
    for (int64_t p = blockIdx.x * blockDim.x + threadIdx.x; p < packs;
         p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      Pack out;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const int64_t col = p * kVec + j;
        const T sum = row_nan || cols[col] ? quiet_nan<T>() : T(0);
        out.v[j] = bias ? bias[col] + sum : sum;
      }
      reinterpret_cast<Pack*>(c + row * n)[p] = out;
    }
  }
}

constexpr unsigned kMaxGridY = 65535;

unsigned grid_for(int64_t n, int64_t per_block, unsigned cap) {
  const int64_t blocks = (n + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < cap ? (blocks > 0 ? blocks : 1) : cap);
}

bool aligned_for(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

template <typename T>
void flag_lines(const T* x, int64_t batch, const Lines& l, unsigned char* flags) {
  if (batch * l.rows * l.ld == 0) return;
  constexpr int kVec = 16 / sizeof(T);
  const bool packed = l.ld % kVec == 0 && l.stride % kVec == 0 && aligned_for(x, 16);
  const dim3 block(32, 8);
  const dim3 grid(grid_for(l.ld / (packed ? kVec : 1), 32, 1024), grid_for(l.rows, 8, 1024),
                  grid_for(batch, 1, 64));
  if (packed) {
    flag_nonfinite_kernel<T, kVec><<<grid, block, 0, stream()>>>(x, batch, l, flags);
  } else {
    flag_nonfinite_kernel<T, 1><<<grid, block, 0, stream()>>>(x, batch, l, flags);
  }
  check_launch("matmul (zero operand)");
}

template <typename T, int kVec>
void write_product(T* c, int64_t batch, int64_t m, int64_t n, const unsigned char* row_flags,
                   const unsigned char* col_flags, const T* bias) {
  const dim3 block(32, 8);
  const dim3 grid(grid_for(n / kVec, 32, 64), grid_for(batch * m, 8, kMaxGridY));
  write_zero_product_kernel<T, kVec>
      <<<grid, block, 0, stream()>>>(c, batch, m, n, row_flags, col_flags, bias);
  check_launch("matmul (zero operand)");
}

}  // namespace

template <typename T>
void zero_product(const GemmArgs& g, bool a_all_zero, bool b_all_zero, const T* a, const T* b,
                  const T* bias, T* c) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  // op(A) is [m, k], stored [m, k] (its rows are stored rows) or [k, m]; op(B) is [k, n],
  // stored [k, n] (its columns are stored columns) or [n, k].
  const Lines a_rows{g.trans_a ? g.k : g.m, g.lda, g.stride_a, g.m, !g.trans_a};
  const Lines b_cols{g.trans_b ? g.n : g.k, g.ldb, g.stride_b, g.n, g.trans_b};
  const size_t bytes = static_cast<size_t>(g.batch * (g.m + g.n));
  Scratch flags(bytes);
  unsigned char* row_flags = flags.as<unsigned char>();
  unsigned char* col_flags = row_flags + g.batch * g.m;
  check(cudaMemsetAsync(row_flags, 0, bytes, stream()), "matmul (zero operand)");
  if (!a_all_zero) flag_lines(a, g.batch, a_rows, row_flags);
  if (!b_all_zero) flag_lines(b, g.batch, b_cols, col_flags);
  constexpr int kVec = 16 / sizeof(T);
  if (g.n % kVec == 0 && aligned_for(c, 16) && (bias == nullptr || aligned_for(bias, 16))) {
    write_product<T, kVec>(c, g.batch, g.m, g.n, row_flags, col_flags, bias);
  } else {
    write_product<T, 1>(c, g.batch, g.m, g.n, row_flags, col_flags, bias);
  }
}

template void zero_product<float>(const GemmArgs&, bool, bool, const float*, const float*,
                                  const float*, float*);
template void zero_product<double>(const GemmArgs&, bool, bool, const double*, const double*,
                                   const double*, double*);

}  // namespace ag::cuda
