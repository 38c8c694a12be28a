#pragma once

// What a rule names (Note [Derivative spec], ops/spec.h): the slots its formulas read, and its
// op's attributes.

#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "engine/device.h"
#include "engine/tensor.h"
#include "ops/view_layout.h"

namespace ag::ops {

// A value a formula may read.
struct Slot {
  enum class Kind : uint8_t { kInput, kResult, kForward };
  Kind kind;
  uint8_t position;  // the input's index, or the forward value's
  const char* name;
};
struct Input : Slot {
  constexpr Input(int index, const char* name) : Slot{Kind::kInput, uint8_t(index), name} {}
};
struct Result : Slot {
  constexpr explicit Result(const char* name = "result") : Slot{Kind::kResult, 0, name} {}
};
// The forward's k-th handed-over value (record()'s from_forward, in order).
struct ForwardValue : Slot {
  constexpr ForwardValue(int k, const char* name) : Slot{Kind::kForward, uint8_t(k), name} {}
};

// The slots most rules name: exp(self), mul(self, other), and their result.
namespace slots {
inline constexpr Input self{0, "self"}, other{1, "other"};
inline constexpr Result result{};
}  // namespace slots

// The ops' attributes, one struct per kind. An OpNode holds one of them. fields(f) calls
// f(name, field) for each field: the names the IR gives them (engine/jit; Note [Op schema],
// ops/schema.h).
struct NoAttrs {
  template <typename F>
  void fields(F&&) {}
};
struct ScalarAttrs {  // add, mul, pow by a scalar
  double scalar;
  template <typename F>
  void fields(F&& f) {
    f("scalar", scalar);
  }
};
struct DimAttrs {  // sum over a dim, log_softmax
  int64_t dim;
  bool keepdim = false;
  template <typename F>
  void fields(F&& f) {
    f("dim", dim);
    f("keepdim", keepdim);
  }
};
struct TransposeAttrs {
  int64_t dim0, dim1;
  template <typename F>
  void fields(F&& f) {
    f("dim0", dim0);
    f("dim1", dim1);
  }
};
struct ProductAttrs {  // mm, bmm: which operands the product transposes
  bool transpose_a, transpose_b;
  template <typename F>
  void fields(F&& f) {
    f("transpose_a", transpose_a);
    f("transpose_b", transpose_b);
  }
};
struct TargetsAttrs {  // nll_loss: the class of each row (shared: nodes copy their attributes)
  std::shared_ptr<const std::vector<int64_t>> targets;
  template <typename F>
  void fields(F&& f) {
    f("targets", targets);
  }
};
struct DeviceAttrs {  // to(): the input's device, where its gradient goes back, and the target
  Device device;
  Device target;
  template <typename F>
  void fields(F&& f) {
    f("device", device);
    f("target", target);
  }
};
struct ShapeAttrs {  // reshape, sum_to, broadcast_to: the result's shape
  Shape shape;
  template <typename F>
  void fields(F&& f) {
    f("shape", shape);
  }
};
struct ViewAttrs {       // a view op (ops/view_ops.cc): its arguments, and where it reads its input
  Shape args;            // the op's integer arguments, in the order its function takes them
  Shape sizes, strides;  // the result's layout over the input's elements in row-major order
  int64_t offset = 0;
  Layout layout() const { return Layout{sizes, strides, offset}; }
  template <typename F>
  void fields(F&& f) {
    f("args", args);
    f("sizes", sizes);
    f("strides", strides);
    f("offset", offset);
  }
};
struct ClampAttrs {  // clamp's bounds
  double min, max;
  template <typename F>
  void fields(F&& f) {
    f("min", min);
    f("max", max);
  }
};
struct CumsumAttrs {  // cumsum: its dim, and whether it sums from the last element (its gradient)
  int64_t dim;
  bool reverse = false;
  template <typename F>
  void fields(F&& f) {
    f("dim", dim);
    f("reverse", reverse);
  }
};
struct IndexAttrs {  // gather, scatter_add, index_select, max/min along a dim: the index
  int64_t dim;
  bool keepdim = false;  // max/min
  Shape index_shape = {};
  // Shared: nodes copy attributes. A node's own copy is dropped when its saved values are
  // released (Note [The index is a saved value], ops/index.cc).
  std::shared_ptr<const std::vector<int64_t>> index = nullptr;
  template <typename F>
  void fields(F&& f) {
    f("dim", dim);
    f("keepdim", keepdim);
    f("index_shape", index_shape);
    f("index", index);
  }
};
using OpAttrs =
    std::variant<NoAttrs, ScalarAttrs, DimAttrs, TransposeAttrs, ProductAttrs, TargetsAttrs,
                 DeviceAttrs, ShapeAttrs, ViewAttrs, ClampAttrs, CumsumAttrs, IndexAttrs>;

}  // namespace ag::ops
