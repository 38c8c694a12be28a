#pragma once

// One element of each elementwise kind, by the rule its line in the op list gives (Note [The op
// list], ops/kinds.h). Compiled for host and device: the CPU's strided and broadcasting loops and
// the CUDA kernels call these, so both compute the very same expression.

#include <cmath>

#include "ops/host_device.h"
#include "ops/kinds.h"

namespace ag::ops {

// The rules call pow, exp, log and tanh unqualified: on the host they are std's overloads (float
// stays float), on the device CUDA's (global) ones; never ag::ops's tensor functions of the same
// names.
#ifdef __CUDA_ARCH__
#define AG_SCALAR_MATH \
  using ::exp;         \
  using ::log;         \
  using ::pow;         \
  using ::tanh
#else
#define AG_SCALAR_MATH \
  using std::exp;      \
  using std::log;      \
  using std::pow;      \
  using std::tanh
#endif

#define AG_RULE_CASE(Kind, Name, rule) \
  case Kind::k##Name:                  \
    return rule;

template <typename T>
AG_HOST_DEVICE inline T apply_binary(BinaryKind kind, T x, T y) {
  AG_SCALAR_MATH;
#define AG_BINARY_CASE(Name, name, rule) AG_RULE_CASE(BinaryKind, Name, rule)
  switch (kind) { AG_BINARY_OPS(AG_BINARY_CASE) }
#undef AG_BINARY_CASE
  return T(0);
}

template <typename T>
AG_HOST_DEVICE inline T apply_unary(UnaryKind kind, T x, T s) {
  AG_SCALAR_MATH;
#define AG_UNARY_CASE(Name, name, rule) AG_RULE_CASE(UnaryKind, Name, rule)
  switch (kind) { AG_UNARY_OPS(AG_UNARY_CASE) }
#undef AG_UNARY_CASE
  return T(0);
}

#undef AG_RULE_CASE
#undef AG_SCALAR_MATH

}  // namespace ag::ops
