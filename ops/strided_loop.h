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

// Note [The order a write visits its target in]
// A write into a target that reaches one storage element at several indices (an overlapping
// as_strided or unfold: PyTorch's overlap checks cannot tell, Note [Overlapping writes] in
// ops/inplace.cc) leaves there the value of whichever index is visited last. PyTorch's
// TensorIterator does not visit in row-major order: it sorts the dims by the operands' strides
// (reorder_dimensions: the output's first, then each input's, a broadcast dim of stride 0 telling
// nothing; for equal strides the dim of smaller size goes inside), so copy_ into
// `x.as_strided([2, 3], [1, 1])` visits down the columns. The CPU copy into a non-contiguous
// target visits its dims in that order, so such a copy leaves what PyTorch's leaves; for a target
// without overlap the order changes nothing. (An in-place add_ or mul_ into such a target applies
// each index's operand in turn to the shared element, in either order: only the rounding of the
// sum or product can differ.)
//
// The dims of a tensor of `shape`, outermost first, in the order TensorIterator visits them,
// given its operands' strides (the output's first), in elements of one size.
template <size_t K>
std::vector<size_t> tensor_iterator_order(const Shape& shape,
                                          const std::array<std::vector<int64_t>, K>& strides) {
  const size_t ndim = shape.size();
  // 1 if dim0 should be visited outside dim1, -1 if inside, 0 if the strides cannot tell.
  auto should_swap = [&](size_t dim0, size_t dim1) {
    for (size_t k = 0; k < K; ++k) {
      const int64_t stride0 = strides[k][dim0], stride1 = strides[k][dim1];
      if (stride0 == 0 || stride1 == 0) continue;  // broadcast: the next operand decides
      if (stride0 < stride1) return -1;
      if (stride0 > stride1) return 1;
      if (shape[dim0] > shape[dim1]) return 1;  // equal strides: the smaller dim goes inside
    }
    return 0;
  };
  // perm[0] is the innermost dim, as TensorIterator's perm_; it starts as n-1, ..., 0.
  std::vector<size_t> perm(ndim);
  for (size_t i = 0; i < ndim; ++i) perm[i] = ndim - 1 - i;
  // Insertion sort with ambiguous comparisons, as reorder_dimensions.
  for (size_t i = 1; i < ndim; ++i) {
    size_t dim1 = i;
    for (size_t dim0 = i; dim0-- > 0;) {
      const int comparison = should_swap(perm[dim0], perm[dim1]);
      if (comparison > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (comparison < 0) {
        break;
      }
    }
  }
  return std::vector<size_t>(perm.rbegin(), perm.rend());
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
