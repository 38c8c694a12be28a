#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/counters.h"
#include "engine/grad_mode.h"
#include "engine/node.h"
#include "engine/saved_variable.h"

namespace ag::ops {

// Note [Derivative spec]
// Every built-in op is described by one OpSpec, next to its forward:
//   - slots: the values its backward may need, each taken from an input, from the result, or
//     handed over by the forward (e.g. a dropout mask);
//   - formulas: one per differentiable input, each naming the slots it uses and computing that
//     input's gradient *with the engine's own ops*, so every derivative is differentiable again.
// Shapes of the inputs are always kept (they are tiny), so a formula that needs only a shape
// saves nothing. Gradients are summed back to the input's shape automatically (broadcasting).
//
// Note [Guarded saves]
// From the spec the engine decides mechanically what to save: slot j is saved iff some formula
// that uses j belongs to an input that requires grad. Nothing else is ever kept alive. (PyTorch
// guards only the single-use case; here every slot is guarded.) With guard_saves off, every slot
// is saved, which is the "before" of the Dropout2d benchmark.

// Extra attributes a formula may need (dims, scalars, flags, targets).
struct OpAttrs {
  double scalar = 0;
  int64_t dim0 = 0;
  int64_t dim1 = 0;
  bool flag0 = false;
  bool flag1 = false;
  Shape shape;
  std::vector<int64_t> targets;
};

enum : int { kFromResult = -1, kFromForward = -2 };

struct SlotSpec {
  const char* name;
  int source;  // an input index, kFromResult, or kFromForward
};

class BackwardContext;
using FormulaFn = Tensor (*)(const BackwardContext&);

struct FormulaSpec {
  const char* input;                // the differentiable input it computes the gradient of
  std::initializer_list<int> uses;  // slot indices
  FormulaFn fn;
};

class OpSpec {
 public:
  OpSpec(const char* name, std::initializer_list<SlotSpec> slots,
         std::initializer_list<FormulaSpec> formulas);

  const std::string& name() const { return name_; }
  size_t num_inputs() const { return formulas_.size(); }
  size_t num_slots() const { return slots_.size(); }
  const SlotSpec& slot(size_t j) const { return slots_[j]; }
  const CounterKey& slot_key(size_t j) const { return slot_keys_[j]; }  // "op:slot"
  FormulaFn formula(size_t i) const { return formulas_[i].fn; }
  const CounterKey& formula_key(size_t i) const { return formula_keys_[i]; }  // "op:input"
  // Note [Guarded saves]: is slot j needed when the inputs' requires_grad flags are `requires`?
  bool slot_needed(size_t j, const std::vector<bool>& requires) const;

 private:
  struct Formula {
    std::string input;
    uint64_t uses_mask;
    FormulaFn fn;
  };
  std::string name_;
  std::vector<SlotSpec> slots_;
  std::vector<Formula> formulas_;
  std::vector<CounterKey> slot_keys_;
  std::vector<CounterKey> formula_keys_;
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

// What a formula sees: the incoming gradient, the saved slots, input shapes and attributes.
class BackwardContext {
 public:
  BackwardContext(OpNode& node, const Tensor& grad) : node_(node), grad_(grad) {}
  const Tensor& grad() const { return grad_; }
  Tensor saved(size_t slot) const;
  const Shape& input_shape(size_t i) const { return node_.input_shapes_[i]; }
  const OpAttrs& attrs() const { return node_.attrs_; }
  const OpSpec& spec() const { return node_.spec_; }

 private:
  OpNode& node_;
  const Tensor& grad_;
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
// and attaches it to the result. `from_forward` supplies the kFromForward slots in order.
// The node's attributes can be passed as a function that builds them only when a node is
// recorded: an OpAttrs is not free to construct and destroy, and most calls record nothing.
inline Tensor record(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                     Tensor result) {
  if (!records_node(inputs)) return result;
  return record_node(spec, inputs, std::move(result), OpAttrs(), {});
}
inline Tensor record(const OpSpec& spec, std::initializer_list<const Tensor*> inputs, Tensor result,
                     OpAttrs attrs, std::initializer_list<Tensor> from_forward = {}) {
  if (!records_node(inputs)) return result;
  return record_node(spec, inputs, std::move(result), std::move(attrs), from_forward);
}
// make_attrs: a function returning the OpAttrs, called only if a node is recorded.
template <typename MakeAttrs, typename = decltype(std::declval<MakeAttrs&>()())>
Tensor record(const OpSpec& spec, std::initializer_list<const Tensor*> inputs, Tensor result,
              MakeAttrs make_attrs) {
  if (!records_node(inputs)) return result;
  return record_node(spec, inputs, std::move(result), make_attrs(), {});
}

}  // namespace ag::ops
