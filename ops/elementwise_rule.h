#pragma once

// The one-statement forms of the elementwise ops' rules (ops/elementwise.cc): a rule of the op
// list's kind K (Note [The op list], ops/kinds.h) is the spec named by K's name, typed by K, so
// that an op's forward runs the kernel of its rule's own kind.

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <utility>

#include "ops/jvp.h"
#include "ops/kinds.h"
#include "ops/ops.h"
#include "ops/spec.h"

namespace ag::ops {

// Every kind's Jacobian is diagonal, so its jvp is its formulas' (Note [Jvp rules], ops/jvp.h).
template <auto Kind>  // a UnaryKind or a BinaryKind
struct KindRule : OpSpec {
  static constexpr auto kind = Kind;
  KindRule(const char* name, std::initializer_list<FormulaSpec> formulas, OpForward forward)
      : OpSpec(name, formulas, std::move(forward)) {
    declare_jvp(jvp_from_formulas);
  }
  // A kind without a derivative (the comparisons).
  KindRule(const char* name, std::initializer_list<Input> inputs, OpForward forward)
      : OpSpec(name, inputs, std::move(forward)) {}
};

// The plain unary ops' functions, by kind (the plain kinds come first).
#define AG_PLAIN_UNARY_POINTER(Name, name, rule) &name,
inline constexpr Tensor (*kPlainUnaryFunctions[])(const Tensor&) = {
    AG_PLAIN_UNARY_FUNCTIONS(AG_PLAIN_UNARY_POINTER)};
#undef AG_PLAIN_UNARY_POINTER

// name(self): a plain unary op, one formula.
template <UnaryKind K>
KindRule<K> unary_rule(std::initializer_list<Slot> uses, FormulaFn fn, FuseFn fuse = nullptr) {
  static_assert(static_cast<size_t>(K) < std::size(kPlainUnaryFunctions), "not a plain kind");
  return KindRule<K>(kind_name(K), {{slots::self, uses, fn, fuse}},
                     OpForward{AliasKind::kPure, NoAttrs(), [](const OpArgs& a) {
                                 return kPlainUnaryFunctions[static_cast<size_t>(K)](a.input(0));
                               }});
}

// F(self, scalar): a unary kind with the op's scalar, one formula.
template <UnaryKind K, Tensor (*F)(const Tensor&, double)>
KindRule<K> scalar_rule(std::initializer_list<Slot> uses, FormulaFn fn) {
  return KindRule<K>(kind_name(K), {{slots::self, uses, fn}}, scalar_forward<F>());
}

// F(input 0, input 1): a binary kind, one formula per input. `add_into` is the op's
// OpForward::add_into, if it has one.
template <BinaryKind K, Tensor (*F)(const Tensor&, const Tensor&)>
KindRule<K> binary_rule(const FormulaSpec& first, const FormulaSpec& second,
                        bool (*add_into)(const Tensor&, const OpArgs&) = nullptr) {
  OpForward forward = binary_forward<F>();
  forward.add_into = add_into;
  return KindRule<K>(kind_name(K), {first, second}, std::move(forward));
}

}  // namespace ag::ops
