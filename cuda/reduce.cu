// Sums: sum_all and sum_to (the reduction behind sum(dim) and every broadcast gradient).
// All reductions are deterministic: a fixed grid and fixed summation order for a given shape.
#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/check.h"
#include "cuda/kernels.h"
#include "cuda/launch.h"
#include "cuda/layout.h"
#include "cuda/stream.h"

namespace ag::cuda {
namespace {

// Each block sums a grid-stride share of `in` into out[blockIdx.x].
template <typename T>
__global__ void partial_sum_kernel(const T* in, T* out, int64_t n) {
  T acc = 0;
  AG_GRID_STRIDE_LOOP(i, n) { acc += in[i]; }
  acc = block_sum(acc);
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

// [rows, cols] -> [cols]: blocks of 32 columns x 8 row lanes; blockIdx.y takes a chunk of rows
// and writes its partial sums to out[blockIdx.y, :].
constexpr int kColumnLanes = 8;
template <typename T>
__global__ void column_sum_kernel(const T* in, T* out, int64_t rows, int64_t cols,
                                  int64_t rows_per_chunk) {
  __shared__ T partial[kColumnLanes][33];  // 33: no bank conflicts on the column reads
  const int64_t col = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  T acc = 0;
  if (col < cols) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kColumnLanes) acc += in[r * cols + col];
  }
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    T total = 0;
    for (int j = 0; j < kColumnLanes; ++j) total += partial[j][threadIdx.x];
    out[static_cast<int64_t>(blockIdx.y) * cols + col] = total;
  }
}

// [rows, len] -> [rows]: one warp per row.
template <typename T>
__global__ void row_sum_kernel(const T* in, T* out, int64_t rows, int64_t len) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // the whole warp leaves together
  T acc = 0;
  for (int64_t i = lane; i < len; i += 32) acc += in[row * len + i];
  acc = warp_sum(acc);
  if (lane == 0) out[row] = acc;
}

// Any other pattern: one thread per output element, looping over the reduced elements.
template <typename T>
__global__ void generic_sum_kernel(const T* in, T* out, int64_t n_out, ReducePlan p) {
  AG_GRID_STRIDE_LOOP(j, n_out) {
    const int64_t base = decompose(j, p.kept_ndim, p.kept_size, p.kept_stride);
    T acc = 0;
    for (int64_t r = 0; r < p.reduced_count; ++r) {
      acc += in[base + decompose(r, p.reduced_ndim, p.reduced_size, p.reduced_stride)];
    }
    out[j] = acc;
  }
}

template <typename T>
void column_sum(const T* in, T* out, int64_t rows, int64_t cols) {
  // Split the rows so that about a thousand blocks run; a second pass sums the chunks.
  const int64_t col_blocks = (cols + 31) / 32;
  const int64_t max_chunks = col_blocks >= 1024 ? 1 : 1024 / col_blocks;
  int64_t per_chunk = (rows + max_chunks - 1) / max_chunks;
  if (per_chunk < 128) per_chunk = 128;
  const int64_t chunks = (rows + per_chunk - 1) / per_chunk;
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(chunks));
  const dim3 block(32, kColumnLanes);
  if (chunks == 1) {
    column_sum_kernel<<<grid, block, 0, stream()>>>(in, out, rows, cols, per_chunk);
    check_launch("sum_to (columns)");
    return;
  }
  Scratch partial(static_cast<size_t>(chunks * cols) * sizeof(T));
  column_sum_kernel<<<grid, block, 0, stream()>>>(in, partial.as<T>(), rows, cols, per_chunk);
  check_launch("sum_to (columns)");
  column_sum(partial.as<T>(), out, chunks, cols);
}

template <typename T>
void copy_device(const T* in, T* out, int64_t n) {
  check(cudaMemcpyAsync(out, in, static_cast<size_t>(n) * sizeof(T), cudaMemcpyDeviceToDevice,
                        stream()),
        "sum_to (copy)");
}

}  // namespace

template <typename T>
void sum_all(const T* in, T* out, int64_t n) {
  if (n == 0) {
    fill(out, 1, T(0));
    return;
  }
  // At most 1024 partial sums (about four elements per thread), then one block adds them up.
  const unsigned blocks = std::min(blocks_for(n, /*per_thread=*/4), 1024u);
  if (blocks == 1) {
    partial_sum_kernel<<<1, kThreads, 0, stream()>>>(in, out, n);
    check_launch("sum");
    return;
  }
  Scratch partial(blocks * sizeof(T));
  partial_sum_kernel<<<blocks, kThreads, 0, stream()>>>(in, partial.as<T>(), n);
  check_launch("sum");
  partial_sum_kernel<<<1, kThreads, 0, stream()>>>(partial.as<T>(), out,
                                                   static_cast<int64_t>(blocks));
  check_launch("sum");
}

template <typename T>
void sum_to(const T* in, T* out, const ReducePlan& p) {
  switch (p.kind) {
    case ReducePlan::kZeros:
      return fill(out, p.n_out, T(0));
    case ReducePlan::kCopy:
      return copy_device(in, out, p.n_out);
    case ReducePlan::kAll:
      return sum_all(in, out, p.n_in);
    case ReducePlan::kColumns:
      return column_sum(in, out, p.rows, p.cols);
    case ReducePlan::kRows:
      row_sum_kernel<<<static_cast<unsigned>((p.rows + kThreads / 32 - 1) / (kThreads / 32)),
                       kThreads>>>(in, out, p.rows, p.cols);
      return check_launch("sum_to (rows)");
    case ReducePlan::kGeneric:
      generic_sum_kernel<<<blocks_for(p.n_out), kThreads, 0, stream()>>>(in, out, p.n_out, p);
      return check_launch("sum_to");
  }
}

template void sum_all<float>(const float*, float*, int64_t);
template void sum_all<double>(const double*, double*, int64_t);
template void sum_to<float>(const float*, float*, const ReducePlan&);
template void sum_to<double>(const double*, double*, const ReducePlan&);

}  // namespace ag::cuda
