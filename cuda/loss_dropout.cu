// log_softmax, nll_loss's gradient pattern and dropout masks.
#include <cuda_runtime.h>

#include "cuda/check.h"
#include "cuda/kernels.h"
#include "cuda/launch.h"
#include "cuda/stream.h"
#include "ops/counter_rng.h"

namespace ag::cuda {
namespace {

// One thread per (outer, inner) row of length len, as on the CPU: max, log-sum-exp, subtract.
template <typename T>
__global__ void log_softmax_kernel(const T* in, T* out, int64_t outer, int64_t len, int64_t inner) {
  AG_GRID_STRIDE_LOOP(row, outer * inner) {
    const int64_t base = (row / inner) * len * inner + row % inner;
    const T* x = in + base;
    T* y = out + base;
    T mx = x[0];
    for (int64_t k = 1; k < len; ++k) mx = max(mx, x[k * inner]);
    T total = 0;
    for (int64_t k = 0; k < len; ++k) total += exp(x[k * inner] - mx);
    const T lse = mx + log(total);
    for (int64_t k = 0; k < len; ++k) y[k * inner] = x[k * inner] - lse;
  }
}

template <typename T>
__global__ void scatter_rows_kernel(T* out, int64_t rows, int64_t cols, const int64_t* targets,
                                    T value) {
  AG_GRID_STRIDE_LOOP(r, rows) { out[r * cols + targets[r]] = value; }
}

template <typename T>
__global__ void gather_rows_kernel(const T* in, T* out, int64_t rows, int64_t cols,
                                   const int64_t* targets) {
  AG_GRID_STRIDE_LOOP(r, rows) { out[r] = in[r * cols + targets[r]]; }
}

template <typename T>
__global__ void dropout_kernel(T* out, int64_t n, uint64_t threshold, uint64_t seed, T keep) {
  AG_GRID_STRIDE_LOOP(i, n) {
    out[i] = ops::kept_by_counter(seed, static_cast<uint64_t>(i), threshold) ? keep : T(0);
  }
}

}  // namespace

template <typename T>
void log_softmax(const T* in, T* out, int64_t outer, int64_t len, int64_t inner) {
  if (outer * len * inner == 0) return;
  log_softmax_kernel<<<blocks_for(outer * inner), kThreads, 0, stream()>>>(in, out, outer, len,
                                                                           inner);
  check_launch("log_softmax");
}

template <typename T>
void gather_rows(const T* in, T* out, int64_t rows, int64_t cols,
                 const std::vector<int64_t>& targets) {
  if (rows == 0) return;
  Scratch device_targets(targets.size() * sizeof(int64_t));
  check(cudaMemcpy(device_targets.as<int64_t>(), targets.data(), targets.size() * sizeof(int64_t),
                   cudaMemcpyHostToDevice),
        "nll_loss (targets)");
  gather_rows_kernel<<<blocks_for(rows), kThreads, 0, stream()>>>(in, out, rows, cols,
                                                                  device_targets.as<int64_t>());
  check_launch("nll_loss");
}

template <typename T>
void nll_pattern(T* out, int64_t rows, int64_t cols, const std::vector<int64_t>& targets, T value) {
  fill(out, rows * cols, T(0));
  if (rows == 0) return;
  Scratch device_targets(targets.size() * sizeof(int64_t));
  check(cudaMemcpy(device_targets.as<int64_t>(), targets.data(), targets.size() * sizeof(int64_t),
                   cudaMemcpyHostToDevice),
        "nll_loss (targets)");
  scatter_rows_kernel<<<blocks_for(rows), kThreads, 0, stream()>>>(
      out, rows, cols, device_targets.as<int64_t>(), value);
  check_launch("nll_loss");
}

template <typename T>
void dropout_mask(T* out, int64_t n, double keep_prob, uint64_t seed) {
  if (n == 0) return;
  const T keep = static_cast<T>(1.0 / keep_prob);  // the same rounding as the CPU kernel
  dropout_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(out, n, ops::keep_threshold(keep_prob),
                                                           seed, keep);
  check_launch("dropout");
}

#define AG_INSTANTIATE(T)                                                                    \
  template void log_softmax<T>(const T*, T*, int64_t, int64_t, int64_t);                     \
  template void gather_rows<T>(const T*, T*, int64_t, int64_t, const std::vector<int64_t>&); \
  template void nll_pattern<T>(T*, int64_t, int64_t, const std::vector<int64_t>&, T);        \
  template void dropout_mask<T>(T*, int64_t, double, uint64_t);
AG_INSTANTIATE(float)
AG_INSTANTIATE(double)
#undef AG_INSTANTIATE

}  // namespace ag::cuda
