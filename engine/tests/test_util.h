#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/tensor.h"
#include "ops/ops.h"

namespace ag::testing {

// A leaf from values (row-major) and a shape.
inline Tensor leaf(const std::vector<double>& values, const Shape& shape, bool requires_grad = true,
                   DType dtype = DType::kFloat64) {
  Tensor t = ops::from_vector(values, shape, dtype);
  t.set_requires_grad(requires_grad);
  return t;
}

// A float64 tensor (no history) from values (row-major) and a shape.
inline Tensor values(const std::vector<double>& v, const Shape& shape) {
  return ops::from_vector(v, shape, DType::kFloat64);
}

inline bool shares_storage(const Tensor& a, const Tensor& b) { return a.shares_storage_with(b); }

inline void expect_values(const Tensor& t, const std::vector<double>& expected,
                          double tol = 1e-12) {
  ASSERT_TRUE(t.defined());
  std::vector<double> got = t.to_vector();
  ASSERT_EQ(got.size(), expected.size()) << t.describe();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "element " << i;
}

// The message of the ag::Error that `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Expects `f` to throw an ag::Error whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  const std::string what = error_of(f);
  if (what.empty()) {
    ADD_FAILURE() << "expected an ag::Error mentioning '" << parts[0] << "'";
    return;
  }
  for (const std::string& p : parts) {
    EXPECT_NE(what.find(p), std::string::npos) << "message lacks '" << p << "': " << what;
  }
}

// A tensor as its values the way the PyTorch goldens scripts print them ("[6, 16]", %g each);
// an undefined one as None.
inline std::string fmt(const Tensor& t) {
  if (!t.defined()) return "None";
  std::string s = "[";
  for (double v : t.to_vector()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    s += (s.size() > 1 ? ", " : "") + std::string(buf);
  }
  return s + "]";
}

}  // namespace ag::testing
