// Launch helpers shared by the .cu files (device code only).
#pragma once

#include <cstdint>

namespace ag::cuda {

constexpr int kThreads = 256;  // threads per block of the 1-D kernels

// Enough blocks to cover n elements, capped: kernels loop (grid-stride) over the rest.
inline unsigned blocks_for(int64_t n, int64_t per_thread = 1) {
  const int64_t per_block = kThreads * per_thread;
  const int64_t blocks = (n + per_block - 1) / per_block;
  constexpr int64_t kMaxBlocks = 1 << 20;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// A grid-stride loop over [0, n): each thread takes i = its global id, then steps by the
// number of threads in the grid.
#define AG_GRID_STRIDE_LOOP(i, n)                                                        \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// Sum over a warp (all 32 lanes active); lane 0 gets the total.
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over a block of kThreads threads; thread 0 gets the total. Fixed order: deterministic.
template <typename T>
__device__ T block_sum(T v) {
  __shared__ T warp_totals[kThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) warp_totals[warp] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / 32 ? warp_totals[threadIdx.x] : T(0);
  if (warp == 0) v = warp_sum(v);
  return v;
}

}  // namespace ag::cuda
