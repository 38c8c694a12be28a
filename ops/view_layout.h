#pragma once

// The view ops' layouts: for each view op, the sizes, strides and storage offset of its result
// as a function of its input's, with PyTorch's argument checks. Pure functions of layouts; the
// ops (ops/view_ops.cc) apply each one twice (Note [Views of any stride], ops/views.h).

#include <cstdint>
#include <vector>

#include "engine/memory/shape.h"

namespace ag::ops {

// Where a tensor reads its storage (Note [Strided tensors], engine/tensor.h).
struct Layout {
  Shape sizes;
  Shape strides;
  int64_t offset = 0;
  bool operator==(const Layout& o) const {
    return sizes == o.sizes && strides == o.strides && offset == o.offset;
  }
};

// The row-major layout of `sizes` at offset 0.
Layout contiguous_layout(const Shape& sizes);
// Whether the layout reads `sizes`' elements in row-major order with no gaps (strides of dims
// of size 1 do not matter; an empty tensor is contiguous).
bool is_contiguous(const Layout& layout);
// Whether two layouts are the same map from indices to elements: what "the view covers its whole
// base, in order" means.
bool same_elements(const Layout& a, const Layout& b);
// Whether some element is read at two indices (an expanded or overlapping as_strided tensor),
// as far as PyTorch's has_internal_overlap can tell: a stride of 0 on a dim of size > 1.
bool has_internal_overlap(const Layout& layout);
// Whether the layout may read some element twice, as PyTorch's _maybe_overlapping_memory (used by
// as_strided_backward) tells over the dims of size > 1: a dim's stride is at most the furthest
// element the dims of smaller strides reach. Never false for a layout that does overlap.
bool may_overlap(const Layout& layout);
// Whether the layout's elements fill one run of the storage with no gaps and no element read
// twice, in some order of the dims (PyTorch's is_non_overlapping_and_dense).
bool is_non_overlapping_and_dense(const Layout& layout);
// The number of storage elements the layout needs past its offset (0 when empty).
int64_t storage_extent(const Layout& layout);

// One function per view op; `op` names the op in errors, which also give the shapes.
Layout transpose_layout(const Layout& in, int64_t dim0, int64_t dim1);
Layout permute_layout(const char* op, const Layout& in, const std::vector<int64_t>& dims);
Layout expand_layout(const Layout& in, const Shape& sizes);
Layout unsqueeze_layout(const Layout& in, int64_t dim);
Layout squeeze_layout(const Layout& in);               // every dim of size 1
Layout squeeze_layout(const Layout& in, int64_t dim);  // dim, if its size is 1
Layout select_layout(const Layout& in, int64_t dim, int64_t index);
// Elements start, start + step, ... below end of dim (start and end already clamped).
Layout slice_layout(const Layout& in, int64_t dim, int64_t start, int64_t end, int64_t step);
Layout diagonal_layout(const Layout& in, int64_t offset, int64_t dim1, int64_t dim2);
Layout unfold_layout(const Layout& in, int64_t dim, int64_t size, int64_t step);
// The strides `sizes` can be viewed with, or false when one dim of the result would span two
// runs of the input that are not evenly spaced (PyTorch's computeStride).
bool reshape_layout(const Layout& in, const Shape& sizes, Layout* out);

}  // namespace ag::ops
