#pragma once

// One element of each elementwise kind, by the rule its line in the op list gives (Note [The op
// list], ops/kinds.h). Compiled for host and device: the CPU's strided and broadcasting loops and
// the CUDA kernels call these, so both compute the very same expression.

#include <cmath>

#include "ops/host_device.h"
#include "ops/kinds.h"

namespace ag::ops {

// The rules call <cmath>'s functions unqualified: on the host they are std's overloads (float
// stays float), on the device CUDA's (global) ones; never ag::ops's tensor functions of the same
// names. AG_SCALAR_MATH names every function a rule may call (ops/cpu/kernels.cc's loops use it
// too).
// clang-format off
#ifdef __CUDA_ARCH__
#define AG_SCALAR_MATH_FROM ::
#else
#define AG_SCALAR_MATH_FROM std::
#endif
#define AG_SCALAR_MATH                                                                            \
  using AG_SCALAR_MATH_FROM exp; using AG_SCALAR_MATH_FROM expm1; using AG_SCALAR_MATH_FROM log;  \
  using AG_SCALAR_MATH_FROM log1p; using AG_SCALAR_MATH_FROM pow; using AG_SCALAR_MATH_FROM sqrt; \
  using AG_SCALAR_MATH_FROM sin; using AG_SCALAR_MATH_FROM cos; using AG_SCALAR_MATH_FROM tan;    \
  using AG_SCALAR_MATH_FROM asin; using AG_SCALAR_MATH_FROM acos; using AG_SCALAR_MATH_FROM atan; \
  using AG_SCALAR_MATH_FROM sinh; using AG_SCALAR_MATH_FROM cosh; using AG_SCALAR_MATH_FROM tanh; \
  using AG_SCALAR_MATH_FROM erf; using AG_SCALAR_MATH_FROM fabs
// clang-format on

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

}  // namespace ag::ops
