// The project's own GEMM, used when cuBLAS cannot be loaded (or when asked, to compare): a
// classic shared-memory tiled kernel. Each block computes a 64x64 tile of C, stepping through K
// in slices of 16 held in shared memory; each of its 16x16 threads keeps a 4x4 set of outputs
// 16 rows/columns apart, so its shared-memory reads are conflict-free and its writes coalesce.
// Transposes are absorbed by the tile loads; batch entries are blockIdx.z.
#include <algorithm>

#include "cuda/check.h"
#include "cuda/kernels.h"
#include "cuda/launch.h"
#include "cuda/stream.h"

namespace ag::cuda {
namespace {

constexpr int kTile = 64;   // rows and columns of C per block
constexpr int kDepth = 16;  // K slice per step
constexpr int kSide = 16;   // threads per block side (16 x 16 = 256)
constexpr int kPer = kTile / kSide;

template <typename T>
__global__ void gemm_kernel(GemmArgs g, const T* A, const T* B, T* C) {
  // +1 column: the loads below write along the first index for one operand layout.
  __shared__ T As[kDepth][kTile + 1];  // As[kk][i] = op(A)[row0 + i, k0 + kk]
  __shared__ T Bs[kDepth][kTile + 1];  // Bs[kk][j] = op(B)[k0 + kk, col0 + j]
  A += static_cast<int64_t>(blockIdx.z) * g.stride_a;
  B += static_cast<int64_t>(blockIdx.z) * g.stride_b;
  C += static_cast<int64_t>(blockIdx.z) * g.stride_c;
  // Row tiles on x (up to 2^31 - 1 blocks), column tiles on y (up to 65535).
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int64_t col0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  T acc[kPer][kPer] = {};

  for (int64_t k0 = 0; k0 < g.k; k0 += kDepth) {
    // Load both tiles; consecutive threads read consecutive addresses of A and B as stored.
    for (int e = threadIdx.x; e < kDepth * kTile; e += kSide * kSide) {
      const int kk = g.trans_a ? e / kTile : e % kDepth;
      const int ii = g.trans_a ? e % kTile : e / kDepth;
      const int64_t i = row0 + ii, k = k0 + kk;
      T v = 0;
      if (i < g.m && k < g.k) v = g.trans_a ? A[k * g.lda + i] : A[i * g.lda + k];
      As[kk][ii] = v;
    }
    for (int e = threadIdx.x; e < kDepth * kTile; e += kSide * kSide) {
      const int kk = g.trans_b ? e % kDepth : e / kTile;
      const int jj = g.trans_b ? e / kDepth : e % kTile;
      const int64_t j = col0 + jj, k = k0 + kk;
      T v = 0;
      if (j < g.n && k < g.k) v = g.trans_b ? B[j * g.ldb + k] : B[k * g.ldb + j];
      Bs[kk][jj] = v;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kDepth; ++kk) {
      T a[kPer], b[kPer];
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        a[p] = As[kk][ty + kSide * p];
        b[p] = Bs[kk][tx + kSide * p];
      }
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
#pragma unroll
        for (int q = 0; q < kPer; ++q) acc[p][q] = fma(a[p], b[q], acc[p][q]);
      }
    }
    __syncthreads();
  }

  for (int p = 0; p < kPer; ++p) {
    const int64_t i = row0 + ty + kSide * p;
    if (i >= g.m) continue;
    for (int q = 0; q < kPer; ++q) {
      const int64_t j = col0 + tx + kSide * q;
      if (j >= g.n) continue;
      T* c = C + i * g.ldc + j;
      *c = g.accumulate ? *c + acc[p][q] : acc[p][q];
    }
  }
}

template <typename T>
__global__ void broadcast_rows_kernel(const T* bias, T* out, int64_t n, int64_t cols) {
  AG_GRID_STRIDE_LOOP(i, n) { out[i] = bias[i % cols]; }
}

}  // namespace

template <typename T>
void gemm_builtin(const GemmArgs& args, const T* a, const T* b, T* c) {
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  if (args.k == 0 && !args.accumulate) {
    for (int64_t z = 0; z < args.batch; ++z) {  // an empty sum: C = 0 (rows may be strided)
      for (int64_t i = 0; i < args.m; ++i) fill(c + z * args.stride_c + i * args.ldc, args.n, T(0));
    }
    return;
  }
  constexpr int64_t kMaxGridZ = 65535;
  const unsigned grid_x = static_cast<unsigned>((args.m + kTile - 1) / kTile);
  const unsigned grid_y = static_cast<unsigned>((args.n + kTile - 1) / kTile);
  for (int64_t first = 0; first < args.batch; first += kMaxGridZ) {
    const unsigned grid_z = static_cast<unsigned>(std::min(args.batch - first, kMaxGridZ));
    gemm_kernel<<<dim3(grid_x, grid_y, grid_z), kSide * kSide, 0, stream()>>>(
        args, a + first * args.stride_a, b + first * args.stride_b, c + first * args.stride_c);
    check_launch("matmul (builtin GEMM)");
  }
}

template <typename T>
void broadcast_rows(const T* bias, T* out, int64_t rows_total, int64_t cols) {
  const int64_t n = rows_total * cols;
  if (n == 0) return;
  broadcast_rows_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(bias, out, n, cols);
  check_launch("addmm (bias)");
}

template void gemm_builtin<float>(const GemmArgs&, const float*, const float*, float*);
template void gemm_builtin<double>(const GemmArgs&, const double*, const double*, double*);
template void broadcast_rows<float>(const float*, float*, int64_t, int64_t);
template void broadcast_rows<double>(const double*, double*, int64_t, int64_t);

}  // namespace ag::cuda
