// How elementwise kernels and reductions walk their operands, as plain host/device code: the
// kernels (.cu) call these on the device, cuda_backend.cc builds them on the host, and
// cuda/tests/plan_test.cc checks them on the CPU (no GPU needed).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/host_device.h"

namespace ag::cuda {

constexpr int kMaxDims = 8;

// An elementwise kernel's iteration: the output is contiguous with shape `size`, and input j is
// read at element offset sum_d index[d] * stride[j][d] (stride 0 broadcasts).
struct Layout {
  int ndim = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[2][kMaxDims] = {};
};

// The offset of input j at linear output index i. Index is uint32_t when every index fits
// (32-bit division is several times cheaper than 64-bit on the GPU).
template <typename Index>
AG_HOST_DEVICE inline int64_t input_offset(const Layout& l, int j, Index i) {
  int64_t offset = 0;
  for (int d = l.ndim - 1; d >= 0; --d) {
    const Index size = static_cast<Index>(l.size[d]);
    offset += static_cast<int64_t>(i % size) * l.stride[j][d];
    i /= size;
  }
  return offset;
}

// The Layout that reads inputs with `strides` (one vector per input, at most two, each over
// `shape`) while writing a contiguous output of `shape`. Size-1 dims are dropped and a dim is
// merged into its outer neighbour when every input steps through the pair contiguously, so
// typical broadcasts need 1 to 3 dims. Returns false when more than kMaxDims would remain.
inline bool make_layout(const std::vector<int64_t>& shape,
                        const std::vector<std::vector<int64_t>>& strides, Layout* out) {
  Layout l;
  const size_t inputs = strides.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = l.ndim > 0;
    for (size_t j = 0; merge && j < inputs; ++j) {
      merge = l.stride[j][l.ndim - 1] == strides[j][d] * shape[d];
    }
    if (merge) {
      l.size[l.ndim - 1] *= shape[d];
      for (size_t j = 0; j < inputs; ++j) l.stride[j][l.ndim - 1] = strides[j][d];
      continue;
    }
    if (l.ndim == kMaxDims) return false;
    l.size[l.ndim] = shape[d];
    for (size_t j = 0; j < inputs; ++j) l.stride[j][l.ndim] = strides[j][d];
    ++l.ndim;
  }
  *out = l;
  return true;
}

// How sum_to reduces a contiguous input of shape in_shape to a contiguous output of shape
// out_shape (same rank; each out dim 1 or equal to in's). Size-1 dims are dropped and
// neighbours of the same kind (kept or reduced) merged, e.g. [N, C, H, W] -> [1, C, 1, 1] is
// reduced, kept, reduced; the shape of that pattern picks the kernel.
struct ReducePlan {
  enum Kind {
    kZeros,    // an empty input: the output is zeros
    kCopy,     // nothing is reduced
    kAll,      // everything is: sum_all
    kColumns,  // [rows, cols] -> [cols]
    kRows,     // [rows, cols] -> [rows]
    kGeneric,  // anything else: per output, a loop over the reduced elements
  };
  Kind kind = kZeros;
  int64_t n_in = 1, n_out = 1;
  int64_t rows = 0, cols = 0;  // kColumns and kRows
  // kGeneric: kept and reduced dims (outer to inner) with their input strides.
  int kept_ndim = 0, reduced_ndim = 0;
  int64_t kept_size[kMaxDims] = {}, kept_stride[kMaxDims] = {};
  int64_t reduced_size[kMaxDims] = {}, reduced_stride[kMaxDims] = {};
  int64_t reduced_count = 1;
};

// Offset of linear index i over dims `size` (outer to inner) with `stride`.
AG_HOST_DEVICE inline int64_t decompose(int64_t i, int ndim, const int64_t* size,
                                        const int64_t* stride) {
  int64_t offset = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    offset += (i % size[d]) * stride[d];
    i /= size[d];
  }
  return offset;
}

// Returns false when a generic plan would need more than kMaxDims kept or reduced dims.
inline bool plan_sum_to(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& out_shape,
                        ReducePlan* out) {
  struct Group {
    int64_t size;
    bool reduced;
  };
  std::vector<Group> groups;
  ReducePlan p;
  bool any_reduced = false;
  for (size_t d = 0; d < in_shape.size(); ++d) {
    p.n_in *= in_shape[d];
    p.n_out *= out_shape[d];
    if (in_shape[d] == 1) continue;
    const bool reduced = out_shape[d] == 1;
    any_reduced = any_reduced || reduced;
    if (!groups.empty() && groups.back().reduced == reduced) {
      groups.back().size *= in_shape[d];
    } else {
      groups.push_back({in_shape[d], reduced});
    }
  }
  if (p.n_in == 0 || p.n_out == 0) {
    p.kind = ReducePlan::kZeros;
  } else if (!any_reduced) {
    p.kind = ReducePlan::kCopy;
  } else if (groups.size() == 1) {
    p.kind = ReducePlan::kAll;
  } else if (groups.size() == 2) {
    p.kind = groups[0].reduced ? ReducePlan::kColumns : ReducePlan::kRows;
    p.rows = groups[0].size;
    p.cols = groups[1].size;
  } else {
    p.kind = ReducePlan::kGeneric;
    // Count each kind's dims, then fill both lists from the inner end (strides grow outward).
    for (const Group& g : groups) ++(g.reduced ? p.reduced_ndim : p.kept_ndim);
    if (p.kept_ndim > kMaxDims || p.reduced_ndim > kMaxDims) return false;
    int kept = p.kept_ndim, reduced = p.reduced_ndim;
    int64_t stride = 1;
    for (size_t g = groups.size(); g-- > 0;) {
      if (groups[g].reduced) {
        --reduced;
        p.reduced_size[reduced] = groups[g].size;
        p.reduced_stride[reduced] = stride;
        p.reduced_count *= groups[g].size;
      } else {
        --kept;
        p.kept_size[kept] = groups[g].size;
        p.kept_stride[kept] = stride;
      }
      stride *= groups[g].size;
    }
  }
  *out = p;
  return true;
}

}  // namespace ag::cuda
