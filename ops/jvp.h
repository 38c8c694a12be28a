#pragma once

// Jvp rules: how an op's result gets its tangent in forward mode (Note [Forward mode],
// engine/forward_ad.h), declared beside the op's derivative spec.

#include <initializer_list>
#include <vector>

#include "engine/forward_ad.h"
#include "ops/spec.h"

namespace ag::ops {

// Note [Jvp rules]
// An op's jvp rule is its result's tangent as a function of its inputs' primal values and
// tangents: PyTorch's `result:` lines in derivatives.yaml. It is declared beside the op's spec,
//
//   const DeclareJvp softmax_jvp{Softmax::spec, [](const JvpContext& c) { ... }};
//
// and written, like a formula, with the engine's own ops, so that a tangent is differentiable in
// both modes again. Three kinds of op need no rule of their own; they name one of these:
// - jvp_from_formulas: an op whose Jacobian for each input is diagonal (every elementwise op, with
//   broadcasting): its reverse formula is its gradient times the partial derivative, so the same
//   formula applied to an input's tangent is that input's part of the jvp, and the two modes
//   share the one declared derivative. The elementwise kinds of the op list (Note [The op list],
//   ops/kinds.h) take it by construction (ops/elementwise_rule.h).
// - jvp_linear: an op linear in its differentiable inputs (views, sums, reshapes, gathers, joins):
//   the op itself applied to the tangents (zeros where an input carries none; a non-differentiable
//   input, an index, as it is).
// - jvp_bilinear: a product of two inputs (mm, bmm): op(ta, b) + op(a, tb).
// A differentiable op that a tangent reaches and that declares no rule raises, naming the op;
// //ops:jvp_rules_test checks that every registered op with a derivative declares one.
//
// Note [Zero tangent terms]
// PyTorch's generated code runs an op's whole jvp formula, an input without a tangent giving a
// zero tensor (_efficientzerotensor): mul's `self_t * other_p + other_t * self_p` computes
// `other_t * self_p` even where only self carries a tangent. That term is zero, but it is
// recorded like any op: it requires grad when self's primal does, and so does the tangent
// (unpack_dual(x * y).tangent requires grad when x does, whichever of x, y is dual). A rule here
// skips such terms (term_tangent() is undefined), except where they would record history (grad
// mode on and some primal requiring grad): then term_tangent() is zeros and the term is computed,
// 0 in value with PyTorch's history. Linear rules read no primal, so their zeros record nothing.

// A rule's view of one op call. It keeps the call's lists, not copies: they must outlive it.
class JvpContext {
 public:
  JvpContext(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
             const TensorList& tangents, const Tensor& result, const OpAttrs& attrs,
             std::initializer_list<Tensor> from_forward, int64_t batch = 0)
      : spec_(spec),
        inputs_(inputs),
        tangents_(tangents),
        result_(result),
        attrs_(attrs),
        from_forward_(from_forward),
        batch_(batch) {}

  // The same call with other tangents (which must outlive it), batched by `batch`.
  JvpContext with_tangents(const TensorList& tangents, int64_t batch) const {
    return JvpContext(spec_, inputs_, tangents, result_, attrs_, from_forward_, batch);
  }

  const OpSpec& spec() const { return spec_; }
  const Tensor& primal(const Input& input) const { return *inputs_.begin()[input.position]; }
  // The input's tangent; undefined where it carries none (a zero tangent).
  const Tensor& tangent(const Input& input) const { return tangents_[input.position]; }
  // The input's tangent, or zeros of its shape (of its tangents' shape where batched).
  Tensor tangent_or_zeros(const Input& input) const;
  // The tangent a term of the rule reads for `input`: its tangent, or zeros where it carries none
  // but the term would record history, else undefined (skip the term; Note [Zero tangent terms]).
  Tensor term_tangent(const Input& input) const;
  const Tensor& result() const { return result_; }
  const Tensor& forward_value(size_t k) const { return from_forward_.begin()[k]; }
  template <typename A>
  const A& attrs() const {
    return std::get<A>(attrs_);
  }
  const OpAttrs& all_attrs() const { return attrs_; }
  size_t num_inputs() const { return inputs_.size(); }
  // The level's batch size: the tangents' leading dim (Note [Batching rules], ops/batched_jvp.h),
  // 0 where unbatched.
  int64_t batch() const { return batch_; }
  // The op's forward on `args`, with the recorded attributes.
  Tensor call(const TensorList& args) const;

 private:
  // Whether a term on a zero tangent would record history (Note [Zero tangent terms]).
  bool zero_terms_record() const;

  const OpSpec& spec_;
  std::initializer_list<const Tensor*> inputs_;
  const TensorList& tangents_;
  const Tensor& result_;
  const OpAttrs& attrs_;
  std::initializer_list<Tensor> from_forward_;
  int64_t batch_;
};

// Adds `term` to a rule's sum of terms, undefined until its first one (Note [Zero tangent terms]:
// a rule skips the term of an input without a tangent).
void add_term(Tensor& sum, const Tensor& term);

// The standard rules of Note [Jvp rules].
Tensor jvp_from_formulas(const JvpContext& c);
Tensor jvp_linear(const JvpContext& c);
Tensor jvp_bilinear(const JvpContext& c);

// Declares `jvp` as `spec`'s rule (Note [Jvp rules]); a namespace-scope object beside the spec.
struct DeclareJvp {
  DeclareJvp(const OpSpec& spec, JvpFn jvp) { spec.declare_jvp(jvp); }
};

// Gives `result` its tangent at every live, unsuspended level at which an input carries one
// (Note [Forward mode]).
void compute_tangents(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                      const Tensor& result, const OpAttrs& attrs,
                      std::initializer_list<Tensor> from_forward);

// record() while a level is live: the result's history first, then its tangents, then the saves
// of the result, as PyTorch's generated code orders them. A rule that reads the result (tanh's
// 1 - result^2) must read it with its history, or the tangent is a constant in the op's inputs to
// reverse mode (a gradient of y_xx = H 1 in the weights); and a saved result must carry its
// tangent, or a formula run inside the level (forward-over-reverse) reads none.
Tensor record_with_tangents(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                            Tensor result, OpAttrs attrs,
                            std::initializer_list<Tensor> from_forward);

// An in-place op's write of `self`: its tangent becomes the op's jvp at the values before the
// write. Call before the write with the out-of-place op's spec; returns what to store after it
// (finish_tangents_of_write), one per level (undefined: none).
TensorList tangents_of_write(const OpSpec& spec, const Tensor& self, const Tensor& other);
void finish_tangents_of_write(const Tensor& self, const TensorList& tangents);

}  // namespace ag::ops
