#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/counters.h"
#include "engine/grad_mode.h"
#include "engine/node.h"
#include "engine/saved_variable.h"

namespace ag::ops {

// Note [Derivative spec]
// Every built-in op is described by one OpSpec, next to its forward, read like a line of
// PyTorch's derivatives.yaml:
//
//   // mul(self, other)
//   struct Mul {
//     static constexpr Input self{0, "self"}, other{1, "other"};
//     static const OpSpec spec;
//   };
//   const OpSpec Mul::spec{"mul",
//                          {{self, {other}, [](const Ctx& c) { return c.grad() * c[other]; }},
//                           {other, {self}, [](const Ctx& c) { return c.grad() * c[self]; }}}};
//
// The op's inputs are slots named by their own names (Input), as are its result (Result) and the
// values its forward hands over (ForwardValue, e.g. a dropout mask). Each formula computes one
// differentiable input's gradient from c.grad() and the slots its `uses` list names, *with the
// engine's own ops*, so every derivative is differentiable again. The uses list is a contract
// checked on every read: c[slot] fails loudly when the running formula did not list the slot, so
// a stale list cannot go unnoticed. Input shapes are always kept (they are tiny), so a formula that
// needs only a shape saves nothing; gradients are summed back to the input's shape automatically
// (broadcasting). An op with attributes (a dim, a scalar, transposes) names them in a struct of
// its own, which its formulas read with c.attrs<T>(), a checked access.
//
// Note [Guarded saves]
// From the spec the engine decides mechanically what to save: a slot is saved iff some formula
// that uses it belongs to an input that requires grad. Nothing else is ever kept alive. (PyTorch
// guards only the single-use case; here every slot is guarded.) With guard_saves off, every slot
// is saved, which is the "before" of the Dropout2d benchmark.

// A value a formula may read.
struct Slot {
  enum class Kind : uint8_t { kInput, kResult, kForward };
  Kind kind;
  uint8_t position;  // the input's index, or the forward value's
  const char* name;
};
struct Input : Slot {
  constexpr Input(int index, const char* name) : Slot{Kind::kInput, uint8_t(index), name} {}
};
struct Result : Slot {
  constexpr explicit Result(const char* name = "result") : Slot{Kind::kResult, 0, name} {}
};
// The forward's k-th handed-over value (record()'s from_forward, in order).
struct ForwardValue : Slot {
  constexpr ForwardValue(int k, const char* name) : Slot{Kind::kForward, uint8_t(k), name} {}
};

// The ops' attributes, one struct per kind. An OpNode holds one of them.
struct NoAttrs {};
struct ScalarAttrs {  // add, mul, pow by a scalar
  double scalar;
};
struct DimAttrs {  // sum over a dim, log_softmax
  int64_t dim;
  bool keepdim = false;
};
struct TransposeAttrs {
  int64_t dim0, dim1;
};
struct ProductAttrs {  // mm, bmm: which operands the product transposes
  bool transpose_a, transpose_b;
};
struct TargetsAttrs {  // nll_loss: the class of each row (shared: nodes copy their attributes)
  std::shared_ptr<const std::vector<int64_t>> targets;
};
struct DeviceAttrs {  // to(): the input's device, where its gradient goes back
  Device device;
};
using OpAttrs = std::variant<NoAttrs, ScalarAttrs, DimAttrs, TransposeAttrs, ProductAttrs,
                             TargetsAttrs, DeviceAttrs>;

class BackwardContext;
using Ctx = BackwardContext;
using FormulaFn = Tensor (*)(const BackwardContext&);

struct FormulaSpec {
  Input input;                       // the differentiable input it computes the gradient of
  std::initializer_list<Slot> uses;  // what it reads (checked, Note [Derivative spec])
  FormulaFn fn;
};

class OpSpec {
 public:
  // One formula per input of the op, in the inputs' order.
  OpSpec(const char* name, std::initializer_list<FormulaSpec> formulas);

  const std::string& name() const { return name_; }
  size_t num_inputs() const { return formulas_.size(); }
  const char* input_name(size_t i) const { return formulas_[i].input_name; }

  // The slots some formula uses, numbered 0..num_slots()-1 in order of first use.
  size_t num_slots() const { return slots_.size(); }
  const Slot& slot(size_t j) const { return slots_[j]; }
  // slot's number; -1 if no formula uses it.
  int slot_index(const Slot& slot) const;
  const CounterKey& slot_key(size_t j) const { return slot_keys_[j]; }  // "op:slot"
  FormulaFn formula(size_t i) const { return formulas_[i].fn; }
  uint64_t formula_uses(size_t i) const { return formulas_[i].uses_mask; }    // bit j: slot j
  const CounterKey& formula_key(size_t i) const { return formulas_[i].key; }  // "op:input"
  // Note [Guarded saves]: is slot j needed when the inputs' requires_grad flags are `requires`?
  bool slot_needed(size_t j, const std::vector<bool>& requires) const;

 private:
  struct Formula {
    const char* input_name;
    uint64_t uses_mask;
    FormulaFn fn;
    CounterKey key;
  };
  std::string name_;
  std::vector<Slot> slots_;
  std::vector<CounterKey> slot_keys_;
  std::vector<Formula> formulas_;
  // slot_index() lookups: by input position, the result, by forward position (-1: unused).
  std::vector<int8_t> input_slot_, forward_slot_;
  int8_t result_slot_ = -1;
};

// The backward node of a built-in op: its spec plus what the forward kept.
class OpNode final : public Node {
 public:
  // `input_requires_grad` and `guard_saves` decide which slots are kept (keeps_slot()).
  OpNode(const OpSpec& spec, EdgeList edges, std::vector<Shape> input_shapes, OpAttrs attrs,
         std::vector<bool> input_requires_grad, bool guard_saves);
  TensorList apply(TensorList&& grads, const Call& call) override;
  std::string name() const override { return spec_.name(); }
  void release_saved() override;
  std::vector<SavedValue> saved_values() const override;

  const OpSpec& spec() const { return spec_; }
  const std::vector<SavedVariable>& saved() const { return saved_; }
  void save(size_t slot, const Tensor& value, bool is_output);
  // Note [Guarded saves]: whether slot j is kept, given which inputs require grad.
  bool keeps_slot(size_t j) const;

 private:
  friend class BackwardContext;
  const OpSpec& spec_;
  std::vector<Shape> input_shapes_;
  OpAttrs attrs_;
  std::vector<SavedVariable> saved_;
  std::vector<bool> input_requires_grad_;
  bool guard_saves_;
};

// What a formula sees: the incoming gradient, the slots its uses list names, the input shapes
// and the op's attributes.
class BackwardContext {
 public:
  BackwardContext(OpNode& node, const Tensor& grad, size_t formula)
      : node_(node), grad_(grad), formula_(formula) {}
  const Tensor& grad() const { return grad_; }
  // The saved value of `slot`, which the running formula must list in its uses.
  Tensor operator[](const Slot& slot) const;
  const Shape& input_shape(const Input& input) const { return node_.input_shapes_[input.position]; }
  template <typename A>
  const A& attrs() const {
    if (const A* a = std::get_if<A>(&node_.attrs_)) return *a;
    fail_attrs_type();
  }
  const OpSpec& spec() const { return node_.spec_; }

 private:
  [[noreturn]] void fail_attrs_type() const;
  OpNode& node_;
  const Tensor& grad_;
  size_t formula_;
};

// Whether any of these requires grad while grad mode is on (i.e. whether record() builds a node).
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);

// Builds the OpNode of `spec` applied to `inputs` and saves the needed slots that come from the
// inputs and the forward (Note [Guarded saves]). An in-place op calls this before it writes, so
// a saved input that the write changes fails the version check in backward, as in PyTorch; the
// write target is `written`, whose saved aliases are kept without history (no reference cycle
// through the new node, and the version check can only fail for them).
std::shared_ptr<OpNode> make_node(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                                  OpAttrs attrs, std::initializer_list<Tensor> from_forward,
                                  const Tensor* written = nullptr);

// Makes `result` the node's output and saves the needed slots that come from the result.
void attach_output(OpNode& node, const Tensor& result);

// make_node + attach_output: record()'s slow half.
Tensor record_node(const OpSpec& spec, std::initializer_list<const Tensor*> inputs, Tensor result,
                   OpAttrs attrs, std::initializer_list<Tensor> from_forward);

// Whether record() builds a node for these inputs. Most calls build none (grad mode off, or no
// input requires grad), so grad mode is tested inline before the call.
inline bool records_node(std::initializer_list<const Tensor*> inputs) {
  return grad_enabled() && any_requires_grad(inputs);
}

// Records `result` as the output of `spec` applied to `inputs` (one per formula, in order):
// if grad mode is on and some input requires grad, creates the OpNode, saves the needed slots
// and attaches it to the result. `from_forward` supplies the ForwardValue slots in order.
inline Tensor record(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                     Tensor result) {
  if (!records_node(inputs)) return result;
  return record_node(spec, inputs, std::move(result), NoAttrs(), {});
}
// The attributes can be passed as a function that builds them only when a node is recorded:
// most calls record nothing, and some attributes (nll_loss's targets) are not free to copy.
template <typename MakeAttrs, typename = decltype(OpAttrs(std::declval<MakeAttrs&>()()))>
Tensor record(const OpSpec& spec, std::initializer_list<const Tensor*> inputs, Tensor result,
              MakeAttrs make_attrs, std::initializer_list<Tensor> from_forward = {}) {
  if (!records_node(inputs)) return result;
  return record_node(spec, inputs, std::move(result), make_attrs(), from_forward);
}
inline Tensor record(const OpSpec& spec, std::initializer_list<const Tensor*> inputs, Tensor result,
                     OpAttrs attrs, std::initializer_list<Tensor> from_forward = {}) {
  if (!records_node(inputs)) return result;
  return record_node(spec, inputs, std::move(result), std::move(attrs), from_forward);
}

}  // namespace ag::ops
