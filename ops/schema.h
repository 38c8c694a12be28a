#pragma once

// The schema the JIT reads off a rule (Note [Op schema]): how to call an op, and the registry of
// specs by name.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/tensor.h"
#include "ops/slots.h"

namespace ag::ops {

// Note [Op schema]
// Besides its derivative, an OpSpec says how to call the op from the JIT (engine/jit): its
// aliasing kind, the attributes it takes (an OpAttrs alternative, whose fields() name them) and a
// function that runs it on engine tensors. Each spec registers itself by name (find_op_spec), and
// the IR's operator `aten::<name>` is that spec: adding an op here makes it traceable and
// executable, and alias analysis reads the kind from here. The kinds, as PyTorch's alias
// annotations say them:
//   kPure      the result is a new tensor                        aten::mul(Tensor a, Tensor b)
//   kView      the result shares input 0's storage               aten::reshape(Tensor(a) self)
//   kInPlace   the op writes input 0 and returns it              aten::add_(Tensor(a!) self)
//   kWildcard  the result may alias any tensor (none in ops/ yet; the IR's list unpacking)
enum class AliasKind : uint8_t { kPure, kView, kInPlace, kWildcard };

class OpSpec;  // ops/spec.h
// An op's arguments as the JIT passes them: the inputs (in the spec's order) and the attributes.
class OpArgs {
 public:
  OpArgs(const TensorList& inputs, const OpAttrs& attrs) : inputs_(inputs), attrs_(attrs) {}
  const Tensor& operator[](const Slot& input) const { return inputs_[input.position]; }
  const Tensor& input(size_t i) const { return inputs_[i]; }
  template <typename A>
  const A& attrs() const {
    return std::get<A>(attrs_);  // the JIT builds the spec's own alternative
  }

 private:
  const TensorList& inputs_;
  const OpAttrs& attrs_;
};

struct OpForward {
  AliasKind alias = AliasKind::kPure;
  OpAttrs attrs;                            // a value of the op's attribute struct (values unused)
  Tensor (*call)(const OpArgs&) = nullptr;  // null: the JIT cannot call the op
  // sum += the op's result in one pass over memory, with the bits of the op then the in-place
  // add, where the operands have sum's shape, dtype and device: returns false, writing nothing,
  // where they do not (Note [Sums fused into formulas], engine/engine.cc). Null: the op cannot.
  bool (*add_into)(const Tensor& sum, const OpArgs&) = nullptr;
};

// The forwards of the common signatures, e.g. OpSpec{"exp", {...}, unary_forward<exp>()}.
template <Tensor (*F)(const Tensor&)>
OpForward unary_forward() {
  return {AliasKind::kPure, NoAttrs(), [](const OpArgs& a) { return F(a.input(0)); }};
}
template <Tensor (*F)(const Tensor&, const Tensor&)>
OpForward binary_forward() {
  return {AliasKind::kPure, NoAttrs(), [](const OpArgs& a) { return F(a.input(0), a.input(1)); }};
}
template <Tensor (*F)(const Tensor&, double)>
OpForward scalar_forward() {
  return {AliasKind::kPure, ScalarAttrs{0.0},
          [](const OpArgs& a) { return F(a.input(0), a.attrs<ScalarAttrs>().scalar); }};
}
template <Tensor& (*F)(Tensor&, const Tensor&)>
OpForward in_place_forward() {
  return {AliasKind::kInPlace, NoAttrs(), [](const OpArgs& a) {
            Tensor self = a.input(0);  // shares the input's TensorImpl: the write goes through
            return F(self, a.input(1));
          }};
}

// The registered specs (Note [Op schema]): by name, or null; and all of them, sorted by name.
const OpSpec* find_op_spec(const std::string& name);
std::vector<const OpSpec*> all_op_specs();

}  // namespace ag::ops
