#include "engine/jit/runtime_value.h"

#include <cstdio>

namespace ag::jit {
namespace {
Shape contiguousStrides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= sizes[i];
  }
  return strides;
}

std::string formatNumber(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}
}  // namespace

RtTensor RtTensor::fromData(Shape sizes, std::vector<double> data) {
  RtTensor t;
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0) throw RuntimeError("negative size in shape " + shapeToString(sizes));
    n *= s;
  }
  if (static_cast<int64_t>(data.size()) != n) {
    throw RuntimeError("fromData: " + std::to_string(data.size()) + " values for shape " + shapeToString(sizes));
  }
  t.strides = contiguousStrides(sizes);
  t.sizes = std::move(sizes);
  t.storage = std::make_shared<std::vector<double>>(std::move(data));
  return t;
}

RtTensor RtTensor::zeros(Shape sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return fromData(std::move(sizes), std::vector<double>(static_cast<size_t>(n), 0.0));
}

int64_t RtTensor::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

bool RtTensor::isContiguous() const { return strides == contiguousStrides(sizes); }

int64_t RtTensor::storageIndex(int64_t linear) const {
  int64_t index = offset;
  for (size_t d = sizes.size(); d-- > 0;) {
    index += (linear % sizes[d]) * strides[d];
    linear /= sizes[d];
  }
  return index;
}

std::vector<double> RtTensor::values() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[static_cast<size_t>(i)] = at(i);
  return out;
}

std::string shapeToString(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string toString(const RtValue& v) {
  if (const auto* d = std::get_if<double>(&v)) return formatNumber(*d);
  if (const auto* t = std::get_if<RtTensor>(&v)) {
    std::string out = "tensor" + shapeToString(t->sizes) + "{";
    std::vector<double> vals = t->values();
    for (size_t i = 0; i < vals.size(); ++i) out += (i ? ", " : "") + formatNumber(vals[i]);
    return out + "}";
  }
  const auto& list = std::get<RtList>(v);
  std::string out = "list(";
  for (size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + toString(RtValue(list[i]));
  return out + ")";
}

}  // namespace ag::jit
