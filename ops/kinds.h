#pragma once

// The elementwise operations every device's kernels implement, generated from one list (Note [The
// op list]). Plain enums and macros with no dependencies, so device code (cuda/*.cu) switches on
// the very same values.

// Note [The op list]
// AG_BINARY_OPS and AG_UNARY_OPS are the elementwise op set, one line per kernel:
//
//   X(Name, "name", scalar rule)
//
// The rule is one element's value as a C++ expression in `x` (and `y`, or the op's `s`calar),
// of type T (float or double), written once and compiled for host and device: from the list come
// the kinds (BinaryKind::kName), their names (kind_name()), the scalar reference rule (apply_binary
// and apply_unary in ops/scalar_rules.h, which run the CPU's strided and broadcasting loops and
// the CUDA kernels), the CPU's contiguous kernels (ops/cpu/kernels.cc: an Eigen expression where
// one is written there, which Eigen vectorizes, else a loop over the rule), every list of "all
// kinds" that tests and generators walk (kAllBinaryKinds, kAllUnaryKinds), and for a plain unary
// op its function in ops/ops.h (declared from the list, defined by ops/elementwise.cc). A rule
// may call the <cmath> functions that AG_SCALAR_MATH (ops/scalar_rules.h) names.
//
// These lists, with the ops that are not one kernel (AG_TENSOR_OPS), make the whole op set:
// AG_OPS in ops/op_list.h, which gives every op an OpId and the test generators their op
// enumerations and names.
//
// To add an elementwise op:
//   1. Add its line here; the kinds, names, scalar rules (CPU kernels, CUDA kernels), the kernel
//      tests (ops/tests/cpu_isa_test.cc, cuda/tests/kernels_test.cc) and, for a plain unary op,
//      its function follow.
//   2. Add its rule to the table at the top of ops/elementwise.cc (Note [Derivative spec],
//      ops/spec.h): a plain unary op's is `name_rule`, which its generated function records.
//   3. Give it its row in the test tree's op table (Note [Op traits], proptests/op_traits.h); the
//      compiler points at the table until it has one.
//   Optionally, an Eigen expression in ops/cpu/kernels.cc where Eigen vectorizes the rule better
//   than the plain loop does (transcendentals).
//
// clang-format off
// Binary kinds: out = x (kind) y.
#define AG_BINARY_OPS(X)                                                    \
  X(Add, "add", x + y)                                                      \
  X(Sub, "sub", x - y)                                                      \
  X(Mul, "mul", x * y)                                                      \
  X(Div, "div", x / y)                                                      \
  X(Pow, "pow", pow(x, y))                                                  \
  /* x where y > 0, else 0: relu's backward in one pass (PyTorch's name) */ \
  X(ThresholdBackward, "threshold_backward", y > T(0) ? x : T(0))           \
  /* x * (1 - y^2): tanh's backward in one pass (PyTorch's name) */         \
  X(TanhBackward, "tanh_backward", x * (T(1) - y * y))                      \
  /* x * (1 - y) * y: sigmoid's backward in one pass (PyTorch's) */         \
  X(SigmoidBackward, "sigmoid_backward", x * (T(1) - y) * y)                \
  /* the larger (smaller) operand; NaN if either is NaN, as PyTorch */      \
  X(Maximum, "maximum", x != x ? x : (y != y ? y : (x > y ? x : y)))        \
  X(Minimum, "minimum", x != x ? x : (y != y ? y : (x < y ? x : y)))        \
  /* comparisons: 1 where they hold, else 0 (Note [Masks are 0 and 1]) */   \
  X(Eq, "eq", x == y ? T(1) : T(0))                                         \
  X(Gt, "gt", x > y ? T(1) : T(0))                                          \
  X(Ge, "ge", x >= y ? T(1) : T(0))

// Plain unary kinds: out = name(x), each the op `Tensor name(const Tensor&)` of ops/ops.h, whose
// declaration and definition are generated from its line (AG_PLAIN_UNARY_FUNCTIONS). A line is
// P(X, Name, name, rule) with `name` an identifier, which AG_UNARY_OPS gives X as a string.
#define AG_PLAIN_UNARY_OPS(X, P)                                \
  P(X, Neg, neg, -x)                                            \
  P(X, Exp, exp, exp(x))                                        \
  P(X, Log, log, log(x))                                        \
  P(X, Tanh, tanh, tanh(x))                                     \
  P(X, Sigmoid, sigmoid, T(1) / (T(1) + exp(-x)))               \
  P(X, Relu, relu, x > T(0) ? x : T(0))                         \
  P(X, Sin, sin, sin(x))                                        \
  P(X, Cos, cos, cos(x))                                        \
  P(X, Abs, abs, fabs(x))                                       \
  P(X, Sqrt, sqrt, sqrt(x))                                     \
  P(X, Sign, sign, x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0)))

// Unary kinds that combine the element with the op's scalar `s`.
#define AG_SCALAR_UNARY_OPS(X)            \
  X(AddScalar, "add_scalar", x + s)       \
  X(MulScalar, "mul_scalar", x * s)       \
  X(PowScalar, "pow_scalar", pow(x, s))   \
  /* NaN stays NaN, as PyTorch's clamp */ \
  X(ClampMin, "clamp_min", x < s ? s : x) \
  X(ClampMax, "clamp_max", x > s ? s : x)

#define AG_LIST_LINE(X, Name, name, rule) X(Name, #name, rule)
#define AG_FUNCTION_LINE(X, Name, name, rule) X(Name, name, rule)
// Unary kinds: out = (kind)(x), X(Name, "name", rule); the plain ones first.
#define AG_UNARY_OPS(X) AG_PLAIN_UNARY_OPS(X, AG_LIST_LINE) AG_SCALAR_UNARY_OPS(X)
// The plain unary ops as X(Name, name, rule), `name` the op's C++ function.
#define AG_PLAIN_UNARY_FUNCTIONS(X) AG_PLAIN_UNARY_OPS(X, AG_FUNCTION_LINE)
// clang-format on

namespace ag::ops {

#define AG_KIND_ENUMERATOR(Name, name, rule) k##Name,
enum class BinaryKind { AG_BINARY_OPS(AG_KIND_ENUMERATOR) };
enum class UnaryKind { AG_UNARY_OPS(AG_KIND_ENUMERATOR) };
#undef AG_KIND_ENUMERATOR

// Every kind, in the list's order.
#define AG_BINARY_KIND(Name, name, rule) BinaryKind::k##Name,
#define AG_UNARY_KIND(Name, name, rule) UnaryKind::k##Name,
inline constexpr BinaryKind kAllBinaryKinds[] = {AG_BINARY_OPS(AG_BINARY_KIND)};
inline constexpr UnaryKind kAllUnaryKinds[] = {AG_UNARY_OPS(AG_UNARY_KIND)};
#undef AG_BINARY_KIND
#undef AG_UNARY_KIND

// The kind's name in the list ("add", "pow_scalar").
#define AG_KIND_NAME(Name, name, rule) name,
constexpr const char* kind_name(BinaryKind kind) {
  constexpr const char* kNames[] = {AG_BINARY_OPS(AG_KIND_NAME)};
  return kNames[static_cast<int>(kind)];
}
constexpr const char* kind_name(UnaryKind kind) {
  constexpr const char* kNames[] = {AG_UNARY_OPS(AG_KIND_NAME)};
  return kNames[static_cast<int>(kind)];
}
#undef AG_KIND_NAME

}  // namespace ag::ops
