#pragma once

#include <cstddef>
#include <string>

namespace ag {

// Element types. float64 exists so gradcheck can use central differences with a tight tolerance.
enum class DType { kFloat32, kFloat64 };

constexpr size_t element_size(DType t) { return t == DType::kFloat32 ? 4 : 8; }
inline std::string to_string(DType t) { return t == DType::kFloat32 ? "float32" : "float64"; }

// Calls fn with a value of the C++ type that matches `t` (float or double).
template <typename Fn>
decltype(auto) dispatch_dtype(DType t, Fn&& fn) {
  if (t == DType::kFloat32) return fn(float{});
  return fn(double{});
}

}  // namespace ag
