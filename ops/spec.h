#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/call.h"
#include "engine/counters.h"
#include "engine/device.h"
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
//
// Note [In-place saves]
// An in-place op (mul_) has its out-of-place op's formulas (mul's), asked, not restated: its spec
// is OpSpec("mul_", mul's spec). Where a formula reads `self`, it means self as it was before the
// write, so make_node() saves that slot of the written input as a clone made before the write
// (PyTorch's original_self = self.clone()); clone() keeps self's history, so the gradient stays
// differentiable in self. Any other saved alias of the written tensor (mul_(a, a)'s other) is
// saved as it is, and fails the version check in backward, as in PyTorch.

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

// The slots most rules name: exp(self), mul(self, other), and their result.
namespace slots {
inline constexpr Input self{0, "self"}, other{1, "other"};
inline constexpr Result result{};
}  // namespace slots

// The ops' attributes, one struct per kind. An OpNode holds one of them. fields(f) calls
// f(name, field) for each field: the names the IR gives them (engine/jit, Note [Op schema]).
struct NoAttrs {
  template <typename F>
  void fields(F&&) {}
};
struct ScalarAttrs {  // add, mul, pow by a scalar
  double scalar;
  template <typename F>
  void fields(F&& f) {
    f("scalar", scalar);
  }
};
struct DimAttrs {  // sum over a dim, log_softmax
  int64_t dim;
  bool keepdim = false;
  template <typename F>
  void fields(F&& f) {
    f("dim", dim);
    f("keepdim", keepdim);
  }
};
struct TransposeAttrs {
  int64_t dim0, dim1;
  template <typename F>
  void fields(F&& f) {
    f("dim0", dim0);
    f("dim1", dim1);
  }
};
struct ProductAttrs {  // mm, bmm: which operands the product transposes
  bool transpose_a, transpose_b;
  template <typename F>
  void fields(F&& f) {
    f("transpose_a", transpose_a);
    f("transpose_b", transpose_b);
  }
};
struct TargetsAttrs {  // nll_loss: the class of each row (shared: nodes copy their attributes)
  std::shared_ptr<const std::vector<int64_t>> targets;
  template <typename F>
  void fields(F&& f) {
    f("targets", targets);
  }
};
struct DeviceAttrs {  // to(): the input's device, where its gradient goes back, and the target
  Device device;
  Device target;
  template <typename F>
  void fields(F&& f) {
    f("device", device);
    f("target", target);
  }
};
struct ShapeAttrs {  // reshape, sum_to, broadcast_to: the result's shape
  Shape shape;
  template <typename F>
  void fields(F&& f) {
    f("shape", shape);
  }
};
using OpAttrs = std::variant<NoAttrs, ScalarAttrs, DimAttrs, TransposeAttrs, ProductAttrs,
                             TargetsAttrs, DeviceAttrs, ShapeAttrs>;

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

class OpSpec;
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

class BackwardContext;
using Ctx = BackwardContext;
using FormulaFn = Tensor (*)(const BackwardContext&);
// Adds the formula's value into `sum` in one pass, or returns false, writing nothing (Note [Sums
// fused into formulas], engine/engine.cc).
using FuseFn = bool (*)(const Tensor& sum, const BackwardContext&);

struct FormulaSpec {
  Input input;                       // the differentiable input it computes the gradient of
  std::initializer_list<Slot> uses;  // what it reads (checked, Note [Derivative spec])
  FormulaFn fn;
  FuseFn fuse = nullptr;  // optional; tried by the node before fn, when a sum is offered
};

class OpSpec {
 public:
  // One formula per input of the op, in the inputs' order. With a forward, the spec registers
  // itself under its name (Note [Op schema]); such a spec must live as long as the program.
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

  // The slots some formula uses, numbered 0..num_slots()-1 in order of first use.
  size_t num_slots() const { return slots_.size(); }
  const Slot& slot(size_t j) const { return slots_[j]; }
  // slot's number; -1 if no formula uses it.
  int slot_index(const Slot& slot) const;
  const CounterKey& slot_key(size_t j) const { return slot_keys_[j]; }  // "op:slot"
  FormulaFn formula(size_t i) const { return formulas_[i].fn; }
  FuseFn fusion(size_t i) const { return formulas_[i].fuse; }  // null: the formula has none
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
    CounterKey key;
  };
  void register_forward();

  std::string name_;
  std::vector<Slot> slots_;
  std::vector<CounterKey> slot_keys_;
  std::vector<Formula> formulas_;
  bool has_derivative_ = true;
  OpForward forward_;
  // slot_index() lookups: by input position, the result, by forward position (-1: unused).
  std::vector<int8_t> input_slot_, forward_slot_;
  int8_t result_slot_ = -1;
};

// The registered specs (Note [Op schema]): by name, or null; and all of them, sorted by name.
const OpSpec* find_op_spec(const std::string& name);
std::vector<const OpSpec*> all_op_specs();

// An op's inputs' shapes, and what its node saved (Note [Small vectors]).
using InputShapes = SmallVector<Shape, 2>;
using SavedList = SmallVector<SavedVariable, 2>;

// The backward node of a built-in op: its spec plus what the forward kept.
class OpNode final : public Node {
 public:
  // One edge and one shape per input, in order (an undefined optional input, e.g. linear's
  // bias: no edge, an empty shape). Which inputs require grad, and `guard_saves`, decide which
  // slots are kept (keeps_slot()).
  OpNode(const OpSpec& spec, std::initializer_list<const Tensor*> inputs, OpAttrs&& attrs,
         bool guard_saves);
  TensorList apply(TensorList&& grads, const Call& call) override;
  std::string name() const override { return spec_.name(); }
  void release_saved() override;
  std::vector<SavedValue> saved_values() const override;

  const OpSpec& spec() const { return spec_; }
  const SavedList& saved() const { return saved_; }
  void save(size_t slot, const Tensor& value, bool is_output);
  // Note [Guarded saves]: whether slot j is kept, given which inputs require grad.
  bool keeps_slot(size_t j) const;
  // Note [Written through a view]: this in-place node wrote through a view, so its base's
  // history runs through it; a backward without retain_graph frees it whole.
  void mark_written_through_view() { written_through_view_ = freed_whole_ = true; }
  // Note [Written through a view]: a backward without retain_graph frees this node whole, so that
  // it refuses to run again (the base's history after a write through a view, as CopySlices).
  void mark_freed_whole_on_release() { freed_whole_ = true; }

 private:
  friend class BackwardContext;
  const OpSpec& spec_;
  InputShapes input_shapes_;
  OpAttrs attrs_;
  SavedList saved_;
  uint64_t input_requires_grad_ = 0;  // bit i: input i
  bool guard_saves_;
  bool written_through_view_ = false;
  bool freed_whole_ = false;  // refuses to run after release_saved()
  bool released_ = false;     // release_saved() ran (tracked only when freed_whole_)
};

// What a formula sees: the incoming gradient, the slots its uses list names, the input shapes
// and the op's attributes. A node's formulas read what the node saved; a formula can also be
// evaluated on values given directly (slot_values, by slot number), outside any node, which is
// how engine/jit derives a DifferentiableGraph's gradient graph from the same formulas.
class BackwardContext {
 public:
  BackwardContext(OpNode& node, const Tensor& grad, size_t formula)
      : spec_(node.spec_),
        grad_(grad),
        formula_(formula),
        input_shapes_(node.input_shapes_.data()),
        attrs_(node.attrs_),
        node_(&node) {}
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

// Whether any of these requires grad while grad mode is on (i.e. whether record() builds a node).
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);

// Builds the OpNode of `spec` applied to `inputs` and saves the needed slots that come from the
// inputs and the forward (Note [Guarded saves]). An in-place op calls this before it writes, so
// a saved input that the write changes fails the version check in backward, as in PyTorch; the
// write target is `written`, the first input: its own slot is saved as a clone (Note [In-place
// saves]), and its other saved aliases are kept without history (no reference cycle through the
// new node, and the version check can only fail for them).
std::shared_ptr<OpNode> make_node(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                                  OpAttrs attrs, std::initializer_list<Tensor> from_forward,
                                  const Tensor* written = nullptr);

// Makes `result` the node's output and saves the needed slots that come from the result. The
// node comes as a shared_ptr to become result's grad_fn: a caller done with it moves it in,
// which costs no reference count update (shared_from_this() would cost an atomic one).
void attach_output(std::shared_ptr<OpNode> node, const Tensor& result);

// make_node + attach_output: record()'s slow half.
Tensor record_node(const OpSpec& spec, std::initializer_list<const Tensor*> inputs, Tensor result,
                   OpAttrs attrs, std::initializer_list<Tensor> from_forward);

// Note [Tracing hook]
// engine/jit's tracer records ops as they run (torch.jit.trace). Every op reports itself here:
// record() for ops that may build a node, trace() for the others (in-place ops, after their
// write; ops without a derivative). When no trace is active this costs one thread-local load.
// Ops that an op calls for its own bookkeeping (a view's history, mul_'s copy of self) run
// under a TracePause, so that a trace holds only what the program called.
class TraceHook {
 public:
  virtual ~TraceHook() = default;
  // `spec` applied to `inputs` (one per input of the spec; undefined for an absent optional
  // input) returned `result`: for an in-place op, the written input after the write.
  virtual void record_op(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                         const Tensor& result, const OpAttrs& attrs) = 0;
  // Whether backward()/grad() may run under this trace, their formulas' ops recorded as the
  // program's own (Note [Tracing gradients], engine/jit/tracer.h).
  virtual bool records_gradients() const { return false; }
};
namespace detail {
inline thread_local TraceHook* trace_hook = nullptr;  // constant-initialized: one TLS load
}  // namespace detail
inline TraceHook* trace_hook() { return detail::trace_hook; }

// Sets the hook (or none) for its lifetime on this thread.
class TraceHookGuard {
 public:
  explicit TraceHookGuard(TraceHook* hook) : previous_(detail::trace_hook) {
    detail::trace_hook = hook;
  }
  ~TraceHookGuard() { detail::trace_hook = previous_; }
  TraceHookGuard(const TraceHookGuard&) = delete;
  TraceHookGuard& operator=(const TraceHookGuard&) = delete;

 private:
  TraceHook* previous_;
};
struct TracePause : TraceHookGuard {
  TracePause() : TraceHookGuard(nullptr) {}
};
// Pauses a forward trace only. Under a trace of gradients (Note [Tracing gradients],
// engine/jit/tracer.h) an op's copy that its formulas read (mul_'s self before the write) is part
// of what the trace must recompute, so it is recorded.
struct ForwardTracePause : TraceHookGuard {
  ForwardTracePause()
      : TraceHookGuard(trace_hook() != nullptr && trace_hook()->records_gradients() ? trace_hook()
                                                                                    : nullptr) {}
};

// Reports an op that builds no node through record() to an active trace.
inline void trace(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                  const Tensor& result, const OpAttrs& attrs = NoAttrs()) {
  if (TraceHook* hook = trace_hook()) hook->record_op(spec, inputs, result, attrs);
}

// Whether record() builds a node for these inputs. Most calls build none (grad mode off, or no
// input requires grad), so grad mode is tested inline before the call.
inline bool records_node(std::initializer_list<const Tensor*> inputs) {
  return grad_enabled() && any_requires_grad(inputs);
}

// Records `result` as the output of `spec` applied to `inputs` (one per formula, in order):
// if grad mode is on and some input requires grad, creates the OpNode, saves the needed slots
// and attaches it to the result. `from_forward` supplies the ForwardValue slots in order.
// Always inlined: most calls record nothing (the backward's own ops, inference), and as a call
// that case cost about 30 instructions of its own per op, a tenth of a small op's.
[[gnu::always_inline]] inline Tensor record(const OpSpec& spec,
                                            std::initializer_list<const Tensor*> inputs,
                                            Tensor result) {
  if (TraceHook* hook = trace_hook()) hook->record_op(spec, inputs, result, NoAttrs());
  if (!records_node(inputs)) return result;
  return record_node(spec, inputs, std::move(result), NoAttrs(), {});
}
// The attributes can be passed as a function that builds them only when a node is recorded (or
// traced): most calls record nothing, and some attributes (nll_loss's targets) are not free to
// copy.
template <typename MakeAttrs, typename = decltype(OpAttrs(std::declval<MakeAttrs&>()()))>
[[gnu::always_inline]] inline Tensor record(const OpSpec& spec,
                                            std::initializer_list<const Tensor*> inputs,
                                            Tensor result, MakeAttrs make_attrs,
                                            std::initializer_list<Tensor> from_forward = {}) {
  if (TraceHook* hook = trace_hook()) hook->record_op(spec, inputs, result, make_attrs());
  if (!records_node(inputs)) return result;
  return record_node(spec, inputs, std::move(result), make_attrs(), from_forward);
}
[[gnu::always_inline]] inline Tensor record(const OpSpec& spec,
                                            std::initializer_list<const Tensor*> inputs,
                                            Tensor result, OpAttrs attrs,
                                            std::initializer_list<Tensor> from_forward = {}) {
  if (TraceHook* hook = trace_hook()) hook->record_op(spec, inputs, result, attrs);
  if (!records_node(inputs)) return result;
  return record_node(spec, inputs, std::move(result), std::move(attrs), from_forward);
}

}  // namespace ag::ops
