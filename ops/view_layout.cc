#include "ops/view_layout.h"

#include <algorithm>
#include <utility>

#include "engine/error.h"

namespace ag::ops {

Layout contiguous_layout(const Shape& sizes) {
  Layout out{sizes, Shape(sizes.size()), 0};
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    out.strides[i] = s;
    s *= sizes[i];
  }
  return out;
}

bool is_contiguous(const Layout& layout) {
  if (numel(layout.sizes) == 0) return true;
  int64_t expected = 1;
  for (size_t i = layout.sizes.size(); i-- > 0;) {
    if (layout.sizes[i] != 1 && layout.strides[i] != expected) return false;
    expected *= layout.sizes[i];
  }
  return true;
}

bool same_elements(const Layout& a, const Layout& b) {
  if (a.sizes != b.sizes) return false;
  if (numel(a.sizes) == 0) return true;
  if (a.offset != b.offset) return false;
  for (size_t i = 0; i < a.sizes.size(); ++i) {
    if (a.sizes[i] != 1 && a.strides[i] != b.strides[i]) return false;
  }
  return true;
}

bool has_internal_overlap(const Layout& layout) {
  return ag::has_internal_overlap(layout.sizes, layout.strides);
}

bool may_overlap(const Layout& layout) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims of size > 1
  for (size_t i = 0; i < layout.sizes.size(); ++i) {
    if (layout.sizes[i] != 1) dims.emplace_back(layout.strides[i], layout.sizes[i]);
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  int64_t furthest = 0;  // the furthest element the dims so far reach
  for (const auto& [stride, size] : dims) {
    if (stride <= furthest) return true;
    furthest += stride * (size - 1);
  }
  return false;
}

bool is_non_overlapping_and_dense(const Layout& layout) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims of size > 1
  for (size_t i = 0; i < layout.sizes.size(); ++i) {
    if (layout.sizes[i] == 0) return true;
    if (layout.sizes[i] != 1) dims.emplace_back(layout.strides[i], layout.sizes[i]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

int64_t storage_extent(const Layout& layout) {
  if (numel(layout.sizes) == 0) return 0;
  int64_t last = 0;
  for (size_t i = 0; i < layout.sizes.size(); ++i)
    last += (layout.sizes[i] - 1) * layout.strides[i];
  return last + 1;
}

Layout transpose_layout(const Layout& in, int64_t dim0, int64_t dim1) {
  Layout out = in;
  std::swap(out.sizes[dim0], out.sizes[dim1]);
  std::swap(out.strides[dim0], out.strides[dim1]);
  return out;
}

Layout permute_layout(const char* op, const Layout& in, const std::vector<int64_t>& dims) {
  const auto n = static_cast<int64_t>(in.sizes.size());
  AG_CHECK(static_cast<int64_t>(dims.size()) == n, op,
           ": number of dims don't match in permute: the tensor of shape ", to_string(in.sizes),
           " has ", n, " dims, the order given has ", dims.size());
  Layout out{Shape(in.sizes.size()), Shape(in.sizes.size()), in.offset};
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = dims[static_cast<size_t>(i)];
    AG_CHECK(d >= -n && d < n, op, ": dim ", d, " is out of range for a tensor of shape ",
             to_string(in.sizes), " (expected a dim in [", -n, ", ", n - 1, "])");
    if (d < 0) d += n;
    AG_CHECK(!seen[static_cast<size_t>(d)], op, ": duplicate dims are not allowed (dim ", d,
             " repeats in the order given for shape ", to_string(in.sizes), ")");
    seen[static_cast<size_t>(d)] = true;
    out.sizes[i] = in.sizes[d];
    out.strides[i] = in.strides[d];
  }
  return out;
}

Layout expand_layout(const Layout& in, const Shape& sizes) {
  const size_t n = sizes.size(), m = in.sizes.size();
  AG_CHECK(n >= m, "expand: the number of sizes provided (", n,
           ") must be greater or equal to the number of dimensions in the tensor (", m,
           "); tensor sizes ", to_string(in.sizes), ", target ", to_string(sizes));
  Layout out{sizes, Shape(n), in.offset};
  for (size_t i = n; i-- > 0;) {
    const bool existing = i >= n - m;
    const int64_t own = existing ? in.sizes[i - (n - m)] : 1;
    int64_t want = sizes[i];
    AG_CHECK(existing || want >= 0,
             "expand: -1 is not allowed in a leading, non-existing dimension ", i,
             "; target sizes ", to_string(sizes));
    if (want == -1) want = own;
    AG_CHECK(own == want || own == 1, "expand: the expanded size of the tensor (", want,
             ") must match the existing size (", own, ") at non-singleton dimension ", i,
             ".  Target sizes: ", to_string(sizes), ".  Tensor sizes: ", to_string(in.sizes));
    out.sizes[i] = want;
    // A new dim that stays of size 1 steps over the dims after it (a 0-dim tensor's expand has
    // every stride 0), as PyTorch's inferExpandGeometry gives it: strides of size-1 dims decide
    // whether two views are the same data (copy_'s early return, ops/inplace.cc).
    const int64_t own_stride = existing ? in.strides[i - (n - m)]
                               : m == 0 ? 0
                                        : out.sizes[i + 1] * out.strides[i + 1];
    out.strides[i] = own == want ? own_stride : 0;
  }
  return out;
}

Layout unsqueeze_layout(const Layout& in, int64_t dim) {
  Layout out = in;
  const auto n = static_cast<int64_t>(in.sizes.size());
  const int64_t stride = dim >= n ? 1 : in.sizes[dim] * in.strides[dim];
  out.sizes.insert(out.sizes.begin() + dim, 1);
  out.strides.insert(out.strides.begin() + dim, stride);
  return out;
}

Layout squeeze_layout(const Layout& in) {
  Layout out{Shape(), Shape(), in.offset};
  for (size_t i = 0; i < in.sizes.size(); ++i) {
    if (in.sizes[i] == 1) continue;
    out.sizes.push_back(in.sizes[i]);
    out.strides.push_back(in.strides[i]);
  }
  return out;
}

Layout squeeze_layout(const Layout& in, int64_t dim) {
  if (in.sizes.empty() || in.sizes[dim] != 1) return in;
  Layout out = in;
  out.sizes.erase(out.sizes.begin() + dim);
  out.strides.erase(out.strides.begin() + dim);
  return out;
}

Layout select_layout(const Layout& in, int64_t dim, int64_t index) {
  const int64_t size = in.sizes[dim];
  AG_CHECK(index >= -size && index < size, "select: index ", index,
           " out of range for tensor of size ", to_string(in.sizes), " at dimension ", dim);
  if (index < 0) index += size;
  Layout out = in;
  out.offset += index * in.strides[dim];
  out.sizes.erase(out.sizes.begin() + dim);
  out.strides.erase(out.strides.begin() + dim);
  return out;
}

Layout slice_layout(const Layout& in, int64_t dim, int64_t start, int64_t end, int64_t step) {
  Layout out = in;
  out.offset += start * in.strides[dim];
  out.sizes[dim] = end > start ? (end - start + step - 1) / step : 0;
  out.strides[dim] = in.strides[dim] * step;
  return out;
}

Layout diagonal_layout(const Layout& in, int64_t offset, int64_t dim1, int64_t dim2) {
  Layout out = in;
  int64_t length = 0;
  if (offset >= 0) {
    length = std::max<int64_t>(std::min(in.sizes[dim1], in.sizes[dim2] - offset), 0);
    if (length > 0) out.offset += offset * in.strides[dim2];
  } else {
    length = std::max<int64_t>(std::min(in.sizes[dim1] + offset, in.sizes[dim2]), 0);
    if (length > 0) out.offset -= offset * in.strides[dim1];
  }
  const int64_t stride = in.strides[dim1] + in.strides[dim2];
  // Drop the larger dim first, so the smaller index stays valid.
  for (int64_t d : {std::max(dim1, dim2), std::min(dim1, dim2)}) {
    out.sizes.erase(out.sizes.begin() + d);
    out.strides.erase(out.strides.begin() + d);
  }
  out.sizes.push_back(length);
  out.strides.push_back(stride);
  return out;
}

Layout unfold_layout(const Layout& in, int64_t dim, int64_t size, int64_t step) {
  const int64_t own = in.sizes.empty() ? 1 : in.sizes[dim];
  AG_CHECK(size <= own, "unfold: maximum size for tensor at dimension ", dim, " is ", own,
           " but size is ", size, " (tensor of shape ", to_string(in.sizes), ")");
  AG_CHECK(size >= 0, "unfold: size is ", size, " but must be >= 0");
  AG_CHECK(step > 0, "unfold: step is ", step, " but must be > 0");
  Layout out = in;
  if (in.sizes.empty()) {
    out.sizes = {size};
    out.strides = {1};
    return out;
  }
  out.sizes[dim] = (own - size) / step + 1;
  out.strides[dim] = in.strides[dim] * step;
  out.sizes.push_back(size);
  out.strides.push_back(in.strides[dim]);
  return out;
}

bool reshape_layout(const Layout& in, const Shape& sizes, Layout* out) {
  // PyTorch's computeStride: walk the input's dims from the last, grouping runs of dims that are
  // laid out contiguously relative to each other ("chunks"); each chunk must be matched by a run
  // of the result's dims with the same element count, which then gets the chunk's strides. A
  // contiguous input too: its dims of size 1 may have any strides, which its result's size-1 dims
  // inherit as PyTorch's do (a [1] view with stride 2 viewed as [1, 1] has strides [2, 2]).
  *out = Layout{sizes, Shape(sizes.size(), 1), in.offset};
  if (in.sizes.empty()) return true;  // a 0-dim input: strides of 1
  if (numel(in.sizes) == 0) {
    // No element to place: the input's strides at its own shape, else row-major over sizes of at
    // least 1.
    if (in.sizes == sizes) {
      out->strides = in.strides;
      return true;
    }
    int64_t s = 1;
    for (size_t i = sizes.size(); i-- > 0;) {
      out->strides[i] = s;
      s *= std::max<int64_t>(sizes[i], 1);
    }
    return true;
  }
  const auto n_in = static_cast<int64_t>(in.sizes.size());
  auto view_d = static_cast<int64_t>(sizes.size()) - 1;
  int64_t chunk_base_stride = n_in > 0 ? in.strides[n_in - 1] : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = n_in - 1; d >= 0; --d) {
    tensor_numel *= in.sizes[d];
    if (d == 0 || (in.sizes[d - 1] != 1 && in.strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
        out->strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = in.strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return false;
  return true;
}

}  // namespace ag::ops
