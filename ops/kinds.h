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
// the CUDA kernels), and every list of "all kinds" that tests and generators walk
// (kAllBinaryKinds, kAllUnaryKinds). The CPU's vectorized Eigen kernels (ops/cpu/kernels.cc) keep
// one switch each, since Eigen vectorizes its own expressions (x.exp(), a.pow(b)) and not a
// scalar lambda; with -Wall -Werror (.bazelrc) a kind missing there is a compile error.
//
// These two lists, with the ops that are not one kernel (AG_TENSOR_OPS), make the whole op set:
// AG_OPS in ops/op_list.h, which gives every op an OpId and the test generators their op
// enumerations, names and coverage tables.
//
// To add an elementwise op:
//   1. Add its line here; the kinds, names, scalar rules (CPU strided path, CUDA kernels) and the
//      kernel tests (ops/tests/cpu_isa_test.cc, cuda/tests/kernels_test.cc) follow.
//   2. Add its Eigen case in ops/cpu/kernels.cc (the compiler points at the switch).
//   3. Write its rule in the table at the top of ops/elementwise.cc (Note [Derivative spec],
//      ops/spec.h); a plain unary op's function (ops/ops.h) is generated from its line and
//      records its rule, `name_rule`.
//   4. Each test generator's coverage() (Note [Generator coverage], proptests/op_coverage.h) now
//      lacks a case, and the compiler points at it: cover the op or exclude it with a reason. To
//      cover it in the random compositions, give it a step in proptests/ops/composition.cc and
//      its value in their reference (proptests/ops/reference.cc), which computes values
//      independently of the engine on purpose.
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
  X(TanhBackward, "tanh_backward", x * (T(1) - y * y))

// Plain unary kinds: out = name(x), each the op `Tensor name(const Tensor&)` of ops/ops.h, whose
// declaration and definition are generated from its line (AG_PLAIN_UNARY_FUNCTIONS). A line is
// P(X, Name, name, rule) with `name` an identifier, which AG_UNARY_OPS gives X as a string.
#define AG_PLAIN_UNARY_OPS(X, P)                  \
  P(X, Neg, neg, -x)                              \
  P(X, Exp, exp, exp(x))                          \
  P(X, Log, log, log(x))                          \
  P(X, Tanh, tanh, tanh(x))                       \
  P(X, Sigmoid, sigmoid, T(1) / (T(1) + exp(-x))) \
  P(X, Relu, relu, x > T(0) ? x : T(0))

// Unary kinds that combine the element with the op's scalar `s`.
#define AG_SCALAR_UNARY_OPS(X)      \
  X(AddScalar, "add_scalar", x + s) \
  X(MulScalar, "mul_scalar", x * s) \
  X(PowScalar, "pow_scalar", pow(x, s))

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
