#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "engine/memory/shape.h"

namespace ag::ops {

// Contiguous (row-major) strides of a shape, in elements.
inline std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

// Strides that read a tensor of shape `from` as if it had the (broadcast) shape `to`: dims that
// are 1 in `from` (or missing on the left) get stride 0.
inline std::vector<int64_t> broadcast_strides(const Shape& from, const Shape& to) {
  std::vector<int64_t> own = contiguous_strides(from);
  std::vector<int64_t> out(to.size(), 0);
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) out[offset + i] = from[i] == 1 ? 0 : own[i];
  return out;
}

// The same for a tensor laid out with `own` strides (Note [Strided tensors], engine/tensor.h).
inline std::vector<int64_t> broadcast_strides(const Shape& from, const Shape& own,
                                              const Shape& to) {
  std::vector<int64_t> out(to.size(), 0);
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) out[offset + i] = from[i] == 1 ? 0 : own[i];
  return out;
}

// Visits every index of `shape` with K operands laid out by `strides`, one innermost run at a time:
// run(offsets, length, inner_strides) where offsets are the operands' element offsets at the run's
// start. Broadcasting, sum_to and transpose are all this loop with different strides.
template <size_t K, typename Run>
void for_each_run(const Shape& shape, const std::array<std::vector<int64_t>, K>& strides, Run run) {
  const size_t ndim = shape.size();
  if (ag::numel(shape) == 0) return;
  if (ndim == 0) {
    run(std::array<int64_t, K>{}, int64_t{1}, std::array<int64_t, K>{});
    return;
  }
  std::array<int64_t, K> inner{};
  for (size_t k = 0; k < K; ++k) inner[k] = strides[k][ndim - 1];
  const int64_t length = shape[ndim - 1];
  std::vector<int64_t> index(ndim, 0);
  std::array<int64_t, K> offsets{};
  while (true) {
    run(offsets, length, inner);
    // Advance the outer index (all dims but the last), odometer style.
    size_t d = ndim - 1;
    while (true) {
      if (d == 0) return;
      --d;
      ++index[d];
      for (size_t k = 0; k < K; ++k) offsets[k] += strides[k][d];
      if (index[d] < shape[d]) break;
      for (size_t k = 0; k < K; ++k) offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace ag::ops
