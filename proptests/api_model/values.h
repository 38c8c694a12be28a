#pragma once

// The API model's own tensors and op definitions: row-major values of any scalar type (double,
// or nested duals for derivatives), computed by plain loops from PyTorch's definitions.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "proptests/api_model/dual.h"

namespace ag::proptests {

using Dims = std::vector<int64_t>;

int64_t count(const Dims& shape);
std::string dims_str(const Dims& shape);  // "[2, 3]"
// NumPy broadcasting of two shapes; false if they do not broadcast.
bool broadcast_dims(const Dims& a, const Dims& b, Dims* out);
// Whether `from` broadcasts to exactly `to` (what an in-place op needs of its other operand).
bool broadcasts_to(const Dims& from, const Dims& to);
// The shape of torch.matmul(a, b); false if the shapes do not multiply.
bool matmul_dims(const Dims& a, const Dims& b, Dims* out);

template <typename T>
struct Val {
  Dims shape;
  std::vector<T> v;
};

template <typename T>
Val<T> lift(const Dims& shape, const std::vector<double>& values) {
  Val<T> out{shape, {}};
  out.v.reserve(values.size());
  for (double x : values) out.v.push_back(T(x));
  return out;
}

// Index of the element of `shape` that broadcasts to position `out_index` of `out` (row-major).
int64_t broadcast_source(const Dims& shape, const Dims& out, int64_t out_index);

template <typename T, typename F>
Val<T> binary(const Val<T>& a, const Val<T>& b, F f) {
  Val<T> out;
  if (!broadcast_dims(a.shape, b.shape, &out.shape)) throw std::logic_error("binary: shapes");
  const int64_t n = count(out.shape);
  out.v.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    out.v.push_back(f(a.v[broadcast_source(a.shape, out.shape, i)],
                      b.v[broadcast_source(b.shape, out.shape, i)]));
  }
  return out;
}

template <typename T, typename F>
Val<T> unary(const Val<T>& a, F f) {
  Val<T> out{a.shape, {}};
  out.v.reserve(a.v.size());
  for (const T& x : a.v) out.v.push_back(f(x));
  return out;
}

// `a` broadcast to `shape` (which it must broadcast to).
template <typename T>
Val<T> expand(const Val<T>& a, const Dims& shape) {
  Val<T> out{shape, {}};
  const int64_t n = count(shape);
  out.v.reserve(n);
  for (int64_t i = 0; i < n; ++i) out.v.push_back(a.v[broadcast_source(a.shape, shape, i)]);
  return out;
}

template <typename T>
Val<T> sum_all(const Val<T>& a) {
  T s(0.0);
  for (const T& x : a.v) s += x;
  return {{}, {s}};
}

// Sum over dimension `dim` (already non-negative).
template <typename T>
Val<T> sum_dim(const Val<T>& a, int64_t dim, bool keepdim) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= a.shape[d];
  for (size_t d = dim + 1; d < a.shape.size(); ++d) inner *= a.shape[d];
  const int64_t len = a.shape[dim];
  Val<T> out;
  out.shape = a.shape;
  if (keepdim) {
    out.shape[dim] = 1;
  } else {
    out.shape.erase(out.shape.begin() + dim);
  }
  out.v.assign(outer * inner, T(0.0));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < len; ++k) {
      for (int64_t i = 0; i < inner; ++i) out.v[o * inner + i] += a.v[(o * len + k) * inner + i];
    }
  }
  return out;
}

template <typename T>
Val<T> scale(Val<T> a, double s) {
  for (T& x : a.v) x = x * T(s);
  return a;
}

template <typename T>
Val<T> reshape(Val<T> a, const Dims& shape) {
  a.shape = shape;
  return a;
}

// The elements of `a` at `index`, as a tensor of `shape`.
template <typename T>
Val<T> gather(const Val<T>& a, const Dims& shape, const std::vector<int64_t>& index) {
  Val<T> out{shape, {}};
  out.v.reserve(index.size());
  for (int64_t i : index) out.v.push_back(a.v[i]);
  return out;
}

template <typename T>
Val<T> transpose(const Val<T>& a, int64_t d0, int64_t d1) {
  Dims shape = a.shape;
  std::swap(shape[d0], shape[d1]);
  Val<T> out{shape, std::vector<T>(a.v.size())};
  const int64_t n = count(a.shape), rank = static_cast<int64_t>(a.shape.size());
  Dims index(rank, 0);
  for (int64_t i = 0; i < n; ++i) {  // index walks a's elements in row-major order
    Dims o = index;
    std::swap(o[d0], o[d1]);
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d) flat = flat * shape[d] + o[d];
    out.v[flat] = a.v[i];
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < a.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// torch.matmul: 1-D operands are promoted (and the promoted dim removed again), batch dims
// broadcast.
template <typename T>
Val<T> matmul(const Val<T>& a, const Val<T>& b) {
  Dims out_shape;
  if (!matmul_dims(a.shape, b.shape, &out_shape)) throw std::logic_error("matmul: shapes");
  Dims sa = a.shape, sb = b.shape;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const int64_t n = sa[sa.size() - 2], k = sa.back(), m = sb.back();
  Dims batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2), batch;
  broadcast_dims(batch_a, batch_b, &batch);
  const int64_t batches = count(batch);
  std::vector<T> out(batches * n * m, T(0.0));
  for (int64_t bi = 0; bi < batches; ++bi) {
    const int64_t ia = broadcast_source(batch_a, batch, bi) * n * k;
    const int64_t ib = broadcast_source(batch_b, batch, bi) * k * m;
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < m; ++c) {
        T s(0.0);
        for (int64_t j = 0; j < k; ++j) s += a.v[ia + r * k + j] * b.v[ib + j * m + c];
        out[(bi * n + r) * m + c] = s;
      }
    }
  }
  return {out_shape, std::move(out)};
}

// torch.nn.functional.linear: input [..., in] @ weight[out, in]^T (+ bias[out]).
template <typename T>
Val<T> linear(const Val<T>& input, const Val<T>& weight, const Val<T>* bias) {
  Val<T> out = matmul(input, transpose(weight, 0, 1));
  if (bias) out = binary(out, *bias, [](const T& x, const T& y) { return x + y; });
  return out;
}

}  // namespace ag::proptests
