// The interpreter's values: a minimal strided double tensor whose views share
// storage (so aliasing in the IR is aliasing at run time), lists of such
// tensors, and floats.
//
// This is deliberately independent of the engine's own Tensor: the pass and
// its tests only need forward semantics, including aliasing, to check that a
// transformed graph computes what the original did.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace ag::jit {

// A run-time failure of an op (bad shapes, index out of range, ...).
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using Shape = std::vector<int64_t>;

struct RtTensor {
  std::shared_ptr<std::vector<double>> storage;
  Shape sizes;
  Shape strides;
  int64_t offset = 0;

  static RtTensor fromData(Shape sizes, std::vector<double> data);
  static RtTensor zeros(Shape sizes);
  int64_t numel() const;
  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  bool isContiguous() const;
  // Storage offset of the element at logical (row-major) index `linear`.
  int64_t storageIndex(int64_t linear) const;
  double at(int64_t linear) const { return (*storage)[static_cast<size_t>(storageIndex(linear))]; }
  double& at(int64_t linear) { return (*storage)[static_cast<size_t>(storageIndex(linear))]; }
  std::vector<double> values() const;  // in logical order
  bool sharesStorageWith(const RtTensor& other) const { return storage == other.storage; }
};

using RtList = std::vector<RtTensor>;
using RtValue = std::variant<RtTensor, RtList, double>;

std::string shapeToString(const Shape& s);
// Exact text of a value (shape and every element with 17 significant digits):
// two values print the same iff they hold the same numbers.
std::string toString(const RtValue& v);

}  // namespace ag::jit
