#include "engine/jit/runtime_ops.h"

#include <algorithm>

namespace ag::jit::rt {
namespace {

// Logical index into a tensor of shape `in` for output index `linear` of the
// broadcast shape `out` (dims aligned on the right, size-1 dims repeat).
int64_t broadcastIndex(const Shape& out, const Shape& in, int64_t linear) {
  int64_t index = 0;
  int64_t in_stride = 1;
  size_t offset = out.size() - in.size();
  for (size_t d = out.size(); d-- > 0;) {
    int64_t coord = linear % out[d];
    linear /= out[d];
    if (d < offset) continue;
    int64_t size = in[d - offset];
    if (size != 1) index += coord * in_stride;
    in_stride *= size;
  }
  return index;
}

int64_t numelOf(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

int64_t checkDim(const char* op, const RtTensor& x, int64_t dim) {
  if (dim < 0 || dim >= x.dim()) {
    throw RuntimeError(std::string(op) + ": dim " + std::to_string(dim) + " out of range for shape " +
                       shapeToString(x.sizes));
  }
  return dim;
}

}  // namespace

Shape broadcastShapes(const char* op, const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      throw RuntimeError(std::string(op) + ": shapes " + shapeToString(a) + " and " + shapeToString(b) +
                         " do not broadcast");
    }
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

RtTensor unary(const RtTensor& x, const std::function<double(double)>& f) {
  std::vector<double> v = x.values();
  for (double& d : v) d = f(d);
  return RtTensor::fromData(x.sizes, std::move(v));
}

RtTensor binary(const char* op, const RtTensor& a, const RtTensor& b, const std::function<double(double, double)>& f) {
  Shape out = broadcastShapes(op, a.sizes, b.sizes);
  std::vector<double> v(static_cast<size_t>(numelOf(out)));
  for (int64_t i = 0; i < numelOf(out); ++i) {
    v[static_cast<size_t>(i)] = f(a.at(broadcastIndex(out, a.sizes, i)), b.at(broadcastIndex(out, b.sizes, i)));
  }
  return RtTensor::fromData(out, std::move(v));
}

void binaryInPlace(const char* op, RtTensor& self, const RtTensor& other,
                   const std::function<double(double, double)>& f) {
  Shape out = broadcastShapes(op, self.sizes, other.sizes);
  if (out != self.sizes) {
    throw RuntimeError(std::string(op) + ": cannot write a result of shape " + shapeToString(out) +
                       " into self of shape " + shapeToString(self.sizes));
  }
  // Compute everything first, so an `other` that overlaps `self` is read
  // before any element is overwritten.
  RtTensor result = binary(op, self, other, f);
  for (int64_t i = 0; i < self.numel(); ++i) self.at(i) = result.at(i);
}

RtTensor sum(const RtTensor& x) {
  double total = 0;
  for (double d : x.values()) total += d;
  return RtTensor::fromData({}, {total});
}

RtTensor transpose(const RtTensor& x, int64_t dim0, int64_t dim1) {
  checkDim("aten::transpose", x, dim0);
  checkDim("aten::transpose", x, dim1);
  RtTensor v = x;
  std::swap(v.sizes[static_cast<size_t>(dim0)], v.sizes[static_cast<size_t>(dim1)]);
  std::swap(v.strides[static_cast<size_t>(dim0)], v.strides[static_cast<size_t>(dim1)]);
  return v;
}

RtTensor reshape(const RtTensor& x, const Shape& shape) {
  for (int64_t s : shape) {
    if (s < 0) throw RuntimeError("aten::reshape: negative size in " + shapeToString(shape));
  }
  if (numelOf(shape) != x.numel()) {
    throw RuntimeError("aten::reshape: cannot view shape " + shapeToString(x.sizes) + " as " + shapeToString(shape));
  }
  RtTensor base = x.isContiguous() ? x : RtTensor::fromData(x.sizes, x.values());
  RtTensor fresh = RtTensor::fromData(shape, std::vector<double>(static_cast<size_t>(x.numel())));
  base.sizes = shape;
  base.strides = fresh.strides;
  return base;
}

RtTensor select(const RtTensor& x, int64_t dim, int64_t index) {
  checkDim("aten::select", x, dim);
  size_t d = static_cast<size_t>(dim);
  if (index < 0 || index >= x.sizes[d]) {
    throw RuntimeError("aten::select: index " + std::to_string(index) + " out of range for dim " +
                       std::to_string(dim) + " of shape " + shapeToString(x.sizes));
  }
  RtTensor v = x;
  v.offset += index * x.strides[d];
  v.sizes.erase(v.sizes.begin() + dim);
  v.strides.erase(v.strides.begin() + dim);
  return v;
}

RtTensor cat(const RtList& xs, int64_t dim) {
  if (xs.empty()) throw RuntimeError("aten::cat: empty list");
  const RtTensor& first = xs.front();
  checkDim("aten::cat", first, dim);
  Shape out = first.sizes;
  out[static_cast<size_t>(dim)] = 0;
  for (const RtTensor& t : xs) {
    Shape a = t.sizes;
    Shape b = first.sizes;
    if (a.size() != b.size()) throw RuntimeError("aten::cat: tensors of different ranks");
    a[static_cast<size_t>(dim)] = b[static_cast<size_t>(dim)] = 0;
    if (a != b) {
      throw RuntimeError("aten::cat: shapes " + shapeToString(t.sizes) + " and " + shapeToString(first.sizes) +
                         " differ outside dim " + std::to_string(dim));
    }
    out[static_cast<size_t>(dim)] += t.sizes[static_cast<size_t>(dim)];
  }
  // Row-major: the result is, for every index of the leading dims, the
  // concatenation of each input's block.
  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out[static_cast<size_t>(d)];
  std::vector<double> v;
  v.reserve(static_cast<size_t>(numelOf(out)));
  std::vector<std::vector<double>> inputs;
  for (const RtTensor& t : xs) inputs.push_back(t.values());
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t k = 0; k < xs.size(); ++k) {
      int64_t block = outer == 0 ? 0 : xs[k].numel() / outer;
      auto begin = inputs[k].begin() + o * block;
      v.insert(v.end(), begin, begin + block);
    }
  }
  return RtTensor::fromData(out, std::move(v));
}

}  // namespace ag::jit::rt
