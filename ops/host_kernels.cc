// The host kernels of Note [Host kernels] (ops/host_kernels.h).
#include "ops/host_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/memory/allocator.h"
#include "ops/backend.h"

namespace ag::ops::host {
namespace {

// `t` in host memory: itself on the CPU, else a copy.
Tensor on_host(const Tensor& strided) {
  // Note [Strided operands] (ops/backend.h): the loops here read contiguous operands.
  const Tensor t = backend_for(strided.device()).dense(strided);
  if (t.device().is_cpu()) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype(), kCPU);
  allocator_for(t.device().type).copy_to_host(out.raw_data(), t.raw_data(), t.nbytes());
  return out;
}

// A host tensor moved to `device` (itself when that is the CPU).
Tensor to_device(const Tensor& t, Device device) {
  if (device.is_cpu()) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype(), device);
  allocator_for(device.type).copy_from_host(out.raw_data(), t.raw_data(), t.nbytes());
  return out;
}

// A tensor's shape around `dim`: outer x len x inner, row-major.
struct AlongDim {
  int64_t outer = 1, len = 1, inner = 1;
  AlongDim(const Shape& s, int64_t dim) : len(s[dim]) {
    for (int64_t d = 0; d < dim; ++d) outer *= s[d];
    for (size_t d = dim + 1; d < s.size(); ++d) inner *= s[d];
  }
};

// Calls fn(x, y, n, stride) for each line along dim: x the input's, y the output's elements.
template <typename T, typename Fn>
void for_each_line(const Tensor& a, const Tensor& out, int64_t dim, Fn&& fn) {
  const AlongDim s(a.shape(), dim);
  const T* pa = a.data<T>();
  T* po = out.data<T>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const int64_t start = o * s.len * s.inner + i;
      fn(pa + start, po + start, s.len, s.inner);
    }
  }
}

// Row-major strides of a shape, in elements.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> out(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) out[d - 1] = out[d] * s[d];
  return out;
}

// Calls fn(position in the index, offset in `of` with the index's dim coordinate replaced by
// the index's value, offset in `src`) for each element of an index of shape `shape`.
template <typename Fn>
void for_each_index(const Shape& shape, const std::vector<int64_t>& index, int64_t dim,
                    const Shape& of, const Shape& src, Fn&& fn) {
  const std::vector<int64_t> of_strides = strides_of(of), src_strides = strides_of(src);
  std::vector<int64_t> coord(shape.size(), 0);
  for (size_t i = 0; i < index.size(); ++i) {
    int64_t at = 0, from = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      at += (static_cast<int64_t>(d) == dim ? index[i] : coord[d]) * of_strides[d];
      from += coord[d] * src_strides[d];
    }
    fn(i, at, from);
    for (size_t d = shape.size(); d-- > 0;) {  // the next coordinate, row-major
      if (++coord[d] < shape[d]) break;
      coord[d] = 0;
    }
  }
}

}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  const Tensor c = on_host(cond), x = on_host(a), y = on_host(b);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), kCPU);
  dispatch_dtype(a.dtype(), [&](auto z) {
    using T = decltype(z);
    const T *pc = c.data<T>(), *px = x.data<T>(), *py = y.data<T>();
    T* po = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) po[i] = pc[i] != T(0) ? px[i] : py[i];
  });
  return to_device(out, a.device());
}

Tensor softmax(const Tensor& a, int64_t dim) {
  const Tensor x = on_host(a);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), kCPU);
  dispatch_dtype(a.dtype(), [&](auto z) {
    using T = decltype(z);
    for_each_line<T>(x, out, dim, [](const T* in, T* o, int64_t n, int64_t stride) {
      T mx = in[0];
      for (int64_t k = 1; k < n; ++k) mx = std::max(mx, in[k * stride]);
      T total = 0;
      for (int64_t k = 0; k < n; ++k) {
        o[k * stride] = std::exp(in[k * stride] - mx);
        total += o[k * stride];
      }
      const T scale = T(1) / total;  // PyTorch's order: a product by the reciprocal
      for (int64_t k = 0; k < n; ++k) o[k * stride] *= scale;
    });
  });
  return to_device(out, a.device());
}

Tensor cumsum(const Tensor& a, int64_t dim, bool reverse) {
  const Tensor x = on_host(a);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), kCPU);
  dispatch_dtype(a.dtype(), [&](auto z) {
    using T = decltype(z);
    for_each_line<T>(x, out, dim, [reverse](const T* in, T* o, int64_t n, int64_t stride) {
      T total = 0;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t k = (reverse ? n - 1 - j : j) * stride;
        total += in[k];
        o[k] = total;
      }
    });
  });
  return to_device(out, a.device());
}

Tensor gather(const Tensor& a, int64_t dim, const Shape& index_shape,
              const std::vector<int64_t>& index) {
  const Tensor x = on_host(a);
  Tensor out = Tensor::empty(index_shape, a.dtype(), kCPU);
  dispatch_dtype(a.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for_each_index(index_shape, index, dim, a.shape(), index_shape,
                   [&](size_t i, int64_t at, int64_t) { po[i] = px[at]; });
  });
  return to_device(out, a.device());
}

Tensor scatter_add(const Tensor& a, int64_t dim, const Shape& index_shape,
                   const std::vector<int64_t>& index, const Tensor& src) {
  const Tensor x = on_host(a), from = on_host(src);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), kCPU);
  dispatch_dtype(a.dtype(), [&](auto z) {
    using T = decltype(z);
    const T *px = x.data<T>(), *ps = from.data<T>();
    T* po = out.data<T>();
    std::copy(px, px + a.numel(), po);
    for_each_index(index_shape, index, dim, a.shape(), src.shape(),
                   [&](size_t, int64_t at, int64_t from_at) { po[at] += ps[from_at]; });
  });
  return to_device(out, a.device());
}

Tensor cat(const TensorList& tensors, int64_t dim, const Shape& out_shape) {
  Tensor out = Tensor::empty(out_shape, tensors[0].dtype(), kCPU);
  const AlongDim whole(out_shape, dim);
  dispatch_dtype(out.dtype(), [&](auto z) {
    using T = decltype(z);
    T* po = out.data<T>();
    int64_t start = 0;  // along dim
    for (const Tensor& t : tensors) {
      const Tensor x = on_host(t);
      const int64_t block = t.shape()[dim] * whole.inner;  // one outer row of t
      for (int64_t o = 0; o < whole.outer; ++o) {
        std::copy(x.data<T>() + o * block, x.data<T>() + (o + 1) * block,
                  po + (o * whole.len + start) * whole.inner);
      }
      start += t.shape()[dim];
    }
  });
  return to_device(out, tensors[0].device());
}

std::pair<Tensor, std::vector<int64_t>> extreme(const Tensor& a, int64_t dim, bool largest) {
  const Tensor x = on_host(a);
  Shape kept = a.shape();
  kept[dim] = 1;
  Tensor out = Tensor::empty(kept, a.dtype(), kCPU);
  std::vector<int64_t> indices;
  indices.reserve(static_cast<size_t>(out.numel()));
  dispatch_dtype(a.dtype(), [&](auto z) {
    using T = decltype(z);
    const AlongDim s(a.shape(), dim);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        const T* line = px + o * s.len * s.inner + i;
        int64_t best = 0;
        for (int64_t k = 1; k < s.len && !std::isnan(line[best * s.inner]); ++k) {
          const T v = line[k * s.inner], b = line[best * s.inner];
          if (std::isnan(v) || (largest ? v > b : v < b)) best = k;
        }
        po[o * s.inner + i] = line[best * s.inner];
        indices.push_back(best);
      }
    }
  });
  return {to_device(out, a.device()), std::move(indices)};
}

}  // namespace ag::ops::host
