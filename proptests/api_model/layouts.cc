// Note [Model layouts] (layouts.h). Each function follows the ATen function named beside it.
#include "proptests/api_model/layouts.h"

#include <algorithm>
#include <numeric>

namespace ag::proptests {

Strided contiguous_layout(const Dims& sizes) {
  Strided s{sizes, Dims(sizes.size(), 1), 0};
  for (size_t d = sizes.size(); d-- > 1;)
    s.strides[d - 1] = s.strides[d] * std::max<int64_t>(sizes[d], 1);
  return s;
}

std::vector<int64_t> positions(const Strided& s) {
  std::vector<int64_t> out;
  const int64_t n = count(s.sizes);
  out.reserve(n);
  Dims index(s.sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = s.offset;
    for (size_t d = 0; d < index.size(); ++d) p += index[d] * s.strides[d];
    out.push_back(p);
    for (size_t d = index.size(); d-- > 0;) {  // the next index, row-major
      if (++index[d] < s.sizes[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

bool is_contiguous(const Strided& s) {  // TensorImpl::compute_contiguous
  if (count(s.sizes) == 0) return true;
  int64_t expected = 1;
  for (size_t d = s.sizes.size(); d-- > 0;) {
    if (s.sizes[d] == 1) continue;
    if (s.strides[d] != expected) return false;
    expected *= s.sizes[d];
  }
  return true;
}

namespace {

// A dim of a tensor of `rank` dims (a 0-dim tensor takes -1 and 0), or -1 when out of range.
int64_t wrap(int64_t dim, int64_t rank) {
  const int64_t n = std::max<int64_t>(rank, 1);
  if (dim < -n || dim >= n) return -1;
  return dim < 0 ? dim + n : dim;
}

ViewResult fail(std::string why) { return {std::nullopt, std::move(why)}; }

}  // namespace

ViewResult apply_view(const Strided& in, const ViewCall& call) {
  const auto rank = static_cast<int64_t>(in.sizes.size());
  const Dims& a = call.args;
  Strided out = in;
  switch (call.op) {
    case ViewOp::kT:
      if (rank > 2) return fail("t() expects a tensor with <= 2 dimensions");
      if (rank < 2) return {out, {}};
      return apply_view(in, {ViewOp::kTranspose, {0, 1}});
    case ViewOp::kTranspose: {  // transpose
      const int64_t d0 = wrap(a[0], rank), d1 = wrap(a[1], rank);
      if (d0 < 0 || d1 < 0) return fail("transpose: dimension out of range");
      if (rank == 0) return {out, {}};
      std::swap(out.sizes[d0], out.sizes[d1]);
      std::swap(out.strides[d0], out.strides[d1]);
      return {out, {}};
    }
    case ViewOp::kPermute: {  // permute
      if (static_cast<int64_t>(a.size()) != rank) return fail("permute: wrong number of dims");
      std::vector<bool> seen(rank, false);
      for (size_t i = 0; i < a.size(); ++i) {
        const int64_t d = wrap(a[i], rank);
        if (d < 0 || seen[d]) return fail("permute: dims out of range or repeated");
        seen[d] = true;
        out.sizes[i] = in.sizes[d];
        out.strides[i] = in.strides[d];
      }
      return {out, {}};
    }
    case ViewOp::kSelect: {  // select
      if (rank == 0) return fail("select() cannot be applied to a 0-dim tensor");
      const int64_t d = wrap(a[0], rank);
      if (d < 0) return fail("select: dimension out of range");
      const int64_t size = in.sizes[d];
      if (a[1] < -size || a[1] >= size) return fail("select: index out of range");
      const int64_t index = a[1] < 0 ? a[1] + size : a[1];
      out.offset += index * in.strides[d];
      out.sizes.erase(out.sizes.begin() + d);
      out.strides.erase(out.strides.begin() + d);
      return {out, {}};
    }
    case ViewOp::kSlice: {  // slice: start and end are clamped, as Python's
      if (rank == 0) return fail("slice() cannot be applied to a 0-dim tensor");
      const int64_t d = wrap(a[0], rank);
      if (d < 0) return fail("slice: dimension out of range");
      if (a[3] <= 0) return fail("slice step must be positive");
      const int64_t size = in.sizes[d];
      auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
      const int64_t start = clamp(a[1]), end = std::max(start, clamp(a[2]));
      out.offset += start * in.strides[d];
      out.sizes[d] = (end - start + a[3] - 1) / a[3];
      out.strides[d] *= a[3];
      return {out, {}};
    }
    case ViewOp::kNarrow: {  // narrow
      if (rank == 0) return fail("narrow() cannot be applied to a 0-dim tensor");
      const int64_t d = wrap(a[0], rank);
      if (d < 0) return fail("narrow: dimension out of range");
      const int64_t size = in.sizes[d];
      if (a[1] < -size || a[1] > size) return fail("narrow: start out of range");
      const int64_t start = a[1] < 0 ? a[1] + size : a[1];
      if (a[2] < 0 || start + a[2] > size) return fail("narrow: start + length exceeds the size");
      out.offset += start * in.strides[d];
      out.sizes[d] = a[2];
      return {out, {}};
    }
    case ViewOp::kExpand: {  // inferExpandGeometry
      const auto n = static_cast<int64_t>(a.size());
      if (n < rank) return fail("expand: fewer sizes than dims");
      out.sizes.assign(n, 0);
      out.strides.assign(n, 0);
      for (int64_t i = n - 1; i >= 0; --i) {
        const int64_t src = i - (n - rank);
        int64_t size = a[i];
        if (src < 0) {
          if (size < 0) return fail("expand: -1 for a new leading dim");
          out.sizes[i] = size;
          out.strides[i] = 0;
          continue;
        }
        if (size == -1) size = in.sizes[src];
        if (in.sizes[src] != size) {
          if (in.sizes[src] != 1) return fail("expand: the expanded size must match");
          out.sizes[i] = size;
          out.strides[i] = 0;
        } else {
          out.sizes[i] = size;
          out.strides[i] = in.strides[src];
        }
      }
      return {out, {}};
    }
    case ViewOp::kUnsqueeze: {  // inferUnsqueezeGeometry
      const int64_t d = wrap(a[0], rank + 1);
      if (d < 0) return fail("unsqueeze: dimension out of range");
      const int64_t stride = d >= rank ? 1 : in.sizes[d] * in.strides[d];
      out.sizes.insert(out.sizes.begin() + d, 1);
      out.strides.insert(out.strides.begin() + d, stride);
      return {out, {}};
    }
    case ViewOp::kSqueeze: {
      if (a.empty()) {
        out.sizes.clear();
        out.strides.clear();
        for (int64_t d = 0; d < rank; ++d) {
          if (in.sizes[d] == 1) continue;
          out.sizes.push_back(in.sizes[d]);
          out.strides.push_back(in.strides[d]);
        }
        return {out, {}};
      }
      const int64_t d = wrap(a[0], rank);
      if (d < 0) return fail("squeeze: dimension out of range");
      if (rank > 0 && in.sizes[d] == 1) {
        out.sizes.erase(out.sizes.begin() + d);
        out.strides.erase(out.strides.begin() + d);
      }
      return {out, {}};
    }
    case ViewOp::kDiagonal: {  // diagonal
      const int64_t offset = a[0], d1 = wrap(a[1], rank), d2 = wrap(a[2], rank);
      if (rank < 2 || d1 < 0 || d2 < 0) return fail("diagonal: dimension out of range");
      if (d1 == d2) return fail("diagonal dimensions cannot be identical");
      const int64_t size =
          offset >= 0 ? std::max<int64_t>(std::min(in.sizes[d1], in.sizes[d2] - offset), 0)
                      : std::max<int64_t>(std::min(in.sizes[d1] + offset, in.sizes[d2]), 0);
      if (size > 0) out.offset += offset >= 0 ? offset * in.strides[d2] : -offset * in.strides[d1];
      out.sizes.erase(out.sizes.begin() + std::max(d1, d2));
      out.sizes.erase(out.sizes.begin() + std::min(d1, d2));
      out.strides.erase(out.strides.begin() + std::max(d1, d2));
      out.strides.erase(out.strides.begin() + std::min(d1, d2));
      out.sizes.push_back(size);
      out.strides.push_back(in.strides[d1] + in.strides[d2]);
      return {out, {}};
    }
  }
  return fail("unknown view op");
}

std::string view_text(const std::string& x, const ViewCall& call) {
  auto list = [&](size_t from) {
    std::string s;
    for (size_t i = from; i < call.args.size(); ++i)
      s += (i > from ? ", " : "") + std::to_string(call.args[i]);
    return s;
  };
  switch (call.op) {
    case ViewOp::kTranspose:
      return x + ".transpose(" + list(0) + ")";
    case ViewOp::kPermute:
      return x + ".permute([" + list(0) + "])";
    case ViewOp::kSelect:
      return x + ".select(" + list(0) + ")";
    case ViewOp::kSlice: {  // x[:, a:b:c], or x[..., a:b:c, :] for a dim counted from the end
      const int64_t dim = call.args[0];
      const std::string range = std::to_string(call.args[1]) + ":" + std::to_string(call.args[2]) +
                                ":" + std::to_string(call.args[3]);
      std::string index = dim < 0 ? "..., " : "";
      for (int64_t d = 0; d < dim; ++d) index += ":, ";
      index += range;
      for (int64_t d = dim + 1; d < 0; ++d) index += ", :";
      return x + "[" + index + "]";
    }
    case ViewOp::kNarrow:
      return x + ".narrow(" + list(0) + ")";
    case ViewOp::kExpand:
      return x + ".expand([" + list(0) + "])";
    case ViewOp::kUnsqueeze:
      return x + ".unsqueeze(" + list(0) + ")";
    case ViewOp::kSqueeze:
      return x + ".squeeze(" + list(0) + ")";
    case ViewOp::kDiagonal:
      return x + ".diagonal(" + list(0) + ")";
    case ViewOp::kT:
      return x + ".t()";
  }
  return x;
}

std::optional<Dims> reshape_strides(const Strided& in, const Dims& sizes) {  // computeStride
  const Dims& old_sizes = in.sizes;
  const Dims& old_strides = in.strides;
  Dims strides(sizes.size(), 1);
  if (old_sizes.empty()) return strides;
  if (count(old_sizes) == 0) {
    if (old_sizes == sizes) return old_strides;
    for (size_t d = sizes.size(); d-- > 1;)
      strides[d - 1] = std::max<int64_t>(sizes[d], 1) * strides[d];
    return strides;
  }
  auto view_d = static_cast<int64_t>(sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (auto tensor_d = static_cast<int64_t>(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_sizes[tensor_d];
    if (tensor_d == 0 || (old_sizes[tensor_d - 1] != 1 &&
                          old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

// TensorImpl's flag: contiguous (so every empty tensor), or compute_non_overlapping_and_dense.
bool non_overlapping_and_dense(const Strided& s) {
  if (is_contiguous(s)) return true;
  const size_t rank = s.sizes.size();
  if (rank == 1) return s.sizes[0] < 2 || s.strides[0] == 1;
  std::vector<size_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    if (s.sizes[a] < 2) return false;
    if (s.sizes[b] < 2) return true;
    return s.strides[a] < s.strides[b];
  });
  int64_t require = 1;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t size = s.sizes[perm[i]];
    if (size < 2) return true;
    if (s.strides[perm[i]] != require) return false;
    require *= size;
  }
  return true;
}

bool has_internal_overlap(const Strided& s) {  // has_internal_overlap == MemOverlap::Yes
  if (non_overlapping_and_dense(s)) return false;
  for (size_t d = 0; d < s.sizes.size(); ++d) {
    if (s.strides[d] == 0 && s.sizes[d] > 1) return true;
  }
  return false;
}

Overlap overlap(const Strided& a, const Strided& b) {  // get_overlap_status
  const int64_t na = count(a.sizes), nb = count(b.sizes);
  if (na == 0 || nb == 0) return Overlap::kNo;
  if (!non_overlapping_and_dense(a) || !non_overlapping_and_dense(b)) return Overlap::kTooHard;
  const int64_t a_end = a.offset + na, b_end = b.offset + nb;
  if (a.offset == b.offset && a_end == b_end) {
    return a.strides == b.strides ? Overlap::kFull : Overlap::kPartial;
  }
  if (a.offset < b_end && b.offset < a_end) return Overlap::kPartial;
  return Overlap::kNo;
}

}  // namespace ag::proptests

namespace ag::proptests {

std::optional<std::vector<ViewCall>> multi_parts(const Dims& s, const MultiCall& call) {
  const auto rank = static_cast<int64_t>(s.size());
  if (rank == 0 || call.dim < -rank || call.dim >= rank || call.n < 1) return std::nullopt;
  const int64_t dim = call.dim < 0 ? call.dim + rank : call.dim;
  const int64_t size = s[static_cast<size_t>(dim)];
  std::vector<ViewCall> out;
  if (call.op == MultiOp::kUnbind) {
    for (int64_t k = 0; k < size; ++k) out.push_back({ViewOp::kSelect, {dim, k}});
    return out;
  }
  if (call.op == MultiOp::kChunk && size == 0) {  // `chunks` empty pieces (split_with_sizes)
    for (int64_t k = 0; k < call.n; ++k) out.push_back({ViewOp::kNarrow, {dim, 0, 0}});
    return out;
  }
  const int64_t piece = call.op == MultiOp::kChunk ? (size + call.n - 1) / call.n : call.n;
  const int64_t pieces = std::max<int64_t>((size + piece - 1) / piece, 1);
  for (int64_t k = 0; k < pieces; ++k) {
    out.push_back({ViewOp::kNarrow, {dim, k * piece, std::min(piece, size - k * piece)}});
  }
  return out;
}

std::string multi_text(const std::string& x, const MultiCall& call) {
  const std::string dim = std::to_string(call.dim);
  switch (call.op) {
    case MultiOp::kSplit:
      return x + ".split(" + std::to_string(call.n) + ", " + dim + ")";
    case MultiOp::kChunk:
      return x + ".chunk(" + std::to_string(call.n) + ", " + dim + ")";
    case MultiOp::kUnbind:
      break;
  }
  return x + ".unbind(" + dim + ")";
}

namespace {

// Each operand's stride per dim of the result, 0 where it broadcasts (compute_strides).
std::vector<Dims> strides_over(const Dims& sizes, const std::vector<Strided>& operands) {
  std::vector<Dims> out;
  for (const Strided& o : operands) {
    Dims st(sizes.size(), 0);
    const size_t skip = sizes.size() - o.sizes.size();
    for (size_t d = 0; d < o.sizes.size(); ++d) {
      if (o.sizes[d] != 1 || sizes[skip + d] == 1) st[skip + d] = o.strides[d];
    }
    out.push_back(std::move(st));
  }
  return out;
}

// reorder_dimensions' insertion sort, then the dense strides of its order (innermost first).
Dims dense_in_sorted_order(const Dims& sizes, const std::vector<Dims>& strides) {
  const size_t rank = sizes.size();
  auto swap_needed = [&](size_t inner, size_t outer) -> int {
    for (const Dims& st : strides) {
      if (st[inner] == 0 || st[outer] == 0) continue;
      if (st[inner] != st[outer]) return st[inner] > st[outer] ? 1 : -1;
      if (sizes[inner] > sizes[outer]) return 1;
    }
    return 0;
  };
  std::vector<size_t> order;  // innermost first
  for (size_t d = rank; d-- > 0;) order.push_back(d);
  for (size_t i = 1; i < rank; ++i) {
    size_t moving = i;
    for (size_t j = i; j-- > 0;) {
      const int c = swap_needed(order[j], order[moving]);
      if (c < 0) break;
      if (c > 0) {
        std::swap(order[j], order[moving]);
        moving = j;
      }
    }
  }
  Dims out(rank, 1);
  int64_t step = 1;
  for (size_t d : order) {
    out[d] = step;
    step *= sizes[d];
  }
  return out;
}

}  // namespace

Dims elementwise_strides(const Dims& sizes, const std::vector<Strided>& operands) {
  const Dims row_major = contiguous_layout(sizes).strides;
  if (count(sizes) == 0) return row_major;  // the engine's empty tensors are contiguous
  bool same = true, all_contiguous = true, all_dense_alike = true;
  for (const Strided& o : operands) {
    same = same && o.sizes == operands[0].sizes;
    all_contiguous = all_contiguous && is_contiguous(o);
    all_dense_alike =
        all_dense_alike && non_overlapping_and_dense(o) && o.strides == operands.back().strides;
  }
  if (same && all_contiguous) return row_major;
  if (same && all_dense_alike) return operands.back().strides;
  return dense_in_sorted_order(sizes, strides_over(sizes, operands));
}

Dims preserve_strides(const Strided& in) {
  if (count(in.sizes) == 0) return contiguous_layout(in.sizes).strides;
  if (non_overlapping_and_dense(in)) return in.strides;
  return dense_in_sorted_order(in.sizes, {in.strides});
}

}  // namespace ag::proptests
