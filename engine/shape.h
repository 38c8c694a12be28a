#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ag {

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// "[2, 3]" — used in every error message that names shapes.
inline std::string to_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

}  // namespace ag
