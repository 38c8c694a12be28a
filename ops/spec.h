#pragma once

// The rule language: an op's derivative as one OpSpec (Note [Derivative spec]), read by its
// formulas through a BackwardContext. Recording nodes is ops/record.h; the schema the JIT reads,
// ops/schema.h; the slots and attributes a rule names, ops/slots.h.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/counters.h"
#include "engine/tensor.h"
#include "ops/schema.h"
#include "ops/slots.h"

namespace ag::ops {

// Note [Derivative spec]
// Every built-in op is described by one OpSpec, read like a line of PyTorch's derivatives.yaml:
//
//   // mul(self, other): one formula per input, {input, the slots it uses, its gradient}
//   const OpSpec mul_spec{"mul",
//                         {{self, {other}, [](const Ctx& c) { return c.grad() * c[other]; }},
//                          {other, {self}, [](const Ctx& c) { return c.grad() * c[self]; }}},
//                         binary_forward<mul>()};
//
// (The elementwise ops of the op list say it in one statement of their kind: mul_rule in
// ops/elementwise.cc.) The op's inputs are slots named by their own names (Input; slots::self,
// slots::other), as are its result (Result; slots::result) and the values its forward hands over
// (ForwardValue, e.g. a dropout mask). Each formula computes one differentiable input's gradient
// from c.grad() and the slots its `uses` list names, *with the engine's own ops*, so every
// derivative is differentiable again. The uses list is a contract checked on every read: c[slot]
// fails loudly when the running formula did not list the slot, so a stale list cannot go
// unnoticed. Input shapes are always kept (they are tiny), so a formula that needs only a shape
// saves nothing; gradients are summed back to the input's shape automatically (broadcasting). An op
// with attributes (a dim, a scalar, transposes) names them in a struct of its own, which its
// formulas read with c.attrs<T>(), a checked access.
//
// Note [Guarded saves]
// From the spec the engine decides mechanically what to save: a slot is saved iff some formula
// that uses it belongs to an input that requires grad. Nothing else is ever kept alive. (PyTorch
// guards only the single-use case; here every slot is guarded.) With guard_saves off, every slot
// is saved, which is the "before" of the Dropout2d benchmark.
//
// Note [In-place saves]
// An in-place op (mul_) has its out-of-place op's formulas (mul's), asked, not restated: its spec
// is OpSpec("mul_", mul's spec). Where a formula reads `self`, it means self as it was before the
// write, so make_node() saves that slot of the written input as a clone made before the write
// (PyTorch's original_self = self.clone()); clone() keeps self's history, so the gradient stays
// differentiable in self. Any other saved alias of the written tensor (mul_(a, a)'s other) is
// saved as it is, and fails the version check in backward, as in PyTorch.

class BackwardContext;
using Ctx = BackwardContext;
class JvpContext;  // ops/jvp.h
// An op's jvp rule: its result's tangent from its inputs' (Note [Jvp rules], ops/jvp.h).
using JvpFn = Tensor (*)(const JvpContext&);
using FormulaFn = Tensor (*)(const BackwardContext&);
// Adds the formula's value into `sum` in one pass, or returns false, writing nothing (Note [Sums
// fused into formulas], engine/engine.cc).
using FuseFn = bool (*)(const Tensor& sum, const BackwardContext&);
// Writes the formula's value over the incoming gradient, `grad`, in place, or returns false,
// writing nothing (Note [Formulas in the incoming gradient]).
using InPlaceFn = bool (*)(const Tensor& grad, const BackwardContext&);

// Note [Formulas in the incoming gradient]
// A formula whose value is the incoming gradient changed at a few elements (CopySlices' gradient
// for the base: the incoming gradient with zeros where the write went, ops/shape_ops.cc) copies
// all of the incoming gradient to change those few. When the node's last formula to run this call
// has an in-place hook (FormulaSpec::in_place), grad mode is off (nothing records the formula's
// ops) and the incoming gradient is held only here (the engine handed it over, and no caller,
// saved value or view can see it: held_only_here, engine/accumulate_grad.h), OpNode::apply lets
// the hook write the value over the incoming gradient and sends that tensor on: no formula of
// the node reads the incoming gradient after its last one. An RNN that writes out[:, t] for 64
// steps has 64 CopySlices in a chain, each of which copied the whole [batch, 64, hidden] gradient
// to zero 1/64 of it (PyTorch's CopySlices copies it too); in place, each zeroes its step. The
// bits are the copy's. Counted in Counters::formulas_in_place.

struct FormulaSpec {
  Input input;                       // the differentiable input it computes the gradient of
  std::initializer_list<Slot> uses;  // what it reads (checked, Note [Derivative spec])
  FormulaFn fn;
  FuseFn fuse = nullptr;         // optional; tried by the node before fn, when a sum is offered
  InPlaceFn in_place = nullptr;  // optional; tried before fn by the last formula to run
};

class OpSpec {
 public:
  // One formula per input of the op, in the inputs' order. With a forward, the spec registers
  // itself under its name (Note [Op schema], ops/schema.h); such a spec must live as long as the
  // program.
  OpSpec(const char* name, std::initializer_list<FormulaSpec> formulas, OpForward forward = {});
  // An op without a derivative (detach, zeros_like): its result never has a history, but the JIT
  // traces and runs it.
  OpSpec(const char* name, std::initializer_list<Input> inputs, OpForward forward);
  // `of`'s formulas and slots under another name: an in-place op reads its derivative off its
  // out-of-place op's spec (Note [In-place saves]).
  OpSpec(const char* name, const OpSpec& of, OpForward forward);
  OpSpec(const OpSpec&) = delete;  // registered by address
  OpSpec& operator=(const OpSpec&) = delete;

  const std::string& name() const { return name_; }
  size_t num_inputs() const { return formulas_.size(); }
  const char* input_name(size_t i) const { return formulas_[i].input_name; }
  // Whether input i has a formula (every input of an op with a derivative does).
  bool differentiable(size_t i) const { return formulas_[i].fn != nullptr; }
  bool has_derivative() const { return has_derivative_; }
  const OpForward& forward() const { return forward_; }
  // The jvp rule (Note [Jvp rules], ops/jvp.h): declared beside the spec (DeclareJvp); null where
  // none is, which an op reached by a tangent reports.
  JvpFn jvp() const { return jvp_; }
  void declare_jvp(JvpFn jvp) const { jvp_ = jvp; }
  // Its batching rule (Note [Batched tangents], ops/batched_jvp.h): the jvp on tangents with a
  // leading batch dim; null where none is declared (the standard rules' own, or one per row).
  JvpFn batched_jvp() const { return batched_jvp_; }
  void declare_batched_jvp(JvpFn jvp) const { batched_jvp_ = jvp; }

  // The slots some formula uses, numbered 0..num_slots()-1 in order of first use.
  size_t num_slots() const { return slots_.size(); }
  const Slot& slot(size_t j) const { return slots_[j]; }
  // slot's number; -1 if no formula uses it.
  int slot_index(const Slot& slot) const;
  const CounterKey& slot_key(size_t j) const { return slot_keys_[j]; }  // "op:slot"
  FormulaFn formula(size_t i) const { return formulas_[i].fn; }
  FuseFn fusion(size_t i) const { return formulas_[i].fuse; }  // null: the formula has none
  InPlaceFn in_place(size_t i) const { return formulas_[i].in_place; }        // null: none
  uint64_t formula_uses(size_t i) const { return formulas_[i].uses_mask; }    // bit j: slot j
  const CounterKey& formula_key(size_t i) const { return formulas_[i].key; }  // "op:input"
  // Note [Guarded saves]: is slot j needed when the inputs that require grad are `requires`
  // (bit i: input i)? An op has at most 64 inputs.
  bool slot_needed(size_t j, uint64_t requires) const;

 private:
  struct Formula {
    const char* input_name;
    uint64_t uses_mask;
    FormulaFn fn;
    FuseFn fuse;
    InPlaceFn in_place;
    CounterKey key;
  };
  void register_forward();

  std::string name_;
  std::vector<Slot> slots_;
  std::vector<CounterKey> slot_keys_;
  std::vector<Formula> formulas_;
  bool has_derivative_ = true;
  OpForward forward_;
  mutable JvpFn jvp_ = nullptr;          // set once, at static initialization (DeclareJvp)
  mutable JvpFn batched_jvp_ = nullptr;  // likewise (DeclareBatchedJvp)
  // slot_index() lookups: by input position, the result, by forward position (-1: unused).
  std::vector<int8_t> input_slot_, forward_slot_;
  int8_t result_slot_ = -1;
};

class OpNode;  // ops/record.h

// What a formula sees: the incoming gradient, the slots its uses list names, the input shapes
// and the op's attributes. A node's formulas read what the node saved; a formula can also be
// evaluated on values given directly (slot_values, by slot number), outside any node, which is
// how engine/jit derives a DifferentiableGraph's gradient graph from the same formulas.
class BackwardContext {
 public:
  // A node's formula (defined in ops/record.h).
  BackwardContext(OpNode& node, const Tensor& grad, size_t formula);
  BackwardContext(const OpSpec& spec, const Tensor& grad, size_t formula,
                  const std::vector<Shape>& input_shapes, const OpAttrs& attrs,
                  const Tensor* slot_values)
      : spec_(spec),
        grad_(grad),
        formula_(formula),
        input_shapes_(input_shapes.data()),
        attrs_(attrs),
        slot_values_(slot_values) {}
  const Tensor& grad() const { return grad_; }
  // The saved value of `slot`, which the running formula must list in its uses.
  Tensor operator[](const Slot& slot) const;
  const Shape& input_shape(const Input& input) const { return input_shapes_[input.position]; }
  template <typename A>
  const A& attrs() const {
    if (const A* a = std::get_if<A>(&attrs_)) return *a;
    fail_attrs_type();
  }
  const OpSpec& spec() const { return spec_; }

 private:
  [[noreturn]] void fail_attrs_type() const;
  const OpSpec& spec_;
  const Tensor& grad_;
  size_t formula_;
  const Shape* input_shapes_;  // one per input
  const OpAttrs& attrs_;
  OpNode* node_ = nullptr;               // reading a node's saved values, or
  const Tensor* slot_values_ = nullptr;  // values given by slot number
};

// The spec of mul_: mul's (Note [In-place saves]; ops/elementwise.cc).
const OpSpec& mul_inplace_spec();

}  // namespace ag::ops
