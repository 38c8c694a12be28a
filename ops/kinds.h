#pragma once

// The elementwise operations every device's kernels implement. Plain enums with no
// dependencies, so device code (cuda/*.cu) switches on the very same values.

namespace ag::ops {

enum class BinaryKind {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kThreshold  // x where y > 0, else 0 (relu's backward in one pass)
};
// Unary kinds; the *Scalar ones combine the element with `scalar`.
enum class UnaryKind {
  kNeg,
  kExp,
  kLog,
  kTanh,
  kSigmoid,
  kRelu,
  kAddScalar,  // x + s
  kMulScalar,  // x * s
  kPowScalar,  // x ^ s
  kRpowScalar  // s ^ x
};

}  // namespace ag::ops
