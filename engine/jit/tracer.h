// Note [Tracing]
// Running ordinary engine code under a TracingScope records the ops it runs as an IR graph, as
// torch.jit.trace does:
//
//   jit::TracingScope scope({x, w});           // x and w become the graph's inputs
//   Tensor y = ops::tanh(ops::mm(x, w));       // runs as usual, and is recorded
//   std::unique_ptr<jit::Graph> g = scope.finish({y});
//
// Every op reports itself through the op set's tracing hook (Note [Tracing hook],
// ops/trace_hook.h) as `aten::<spec name>` with the spec's attributes. The trace follows tensors,
// not variables:
//  - an op's result stands for the new value; a view's result aliases its input in the IR, as at
//    run time (the op's AliasKind);
//  - an in-place op's result is a new value standing for the written tensor from then on, so
//    later reads see the write (`%a2 = aten::add_(%a, %b)`; AliasDb orders reads of %a before
//    the write);
//  - a tensor that no traced op made (a factory's result, a tensor captured from outside) becomes
//    a prim::Constant holding that very tensor, as torch.jit.trace bakes constants in; undefined
//    tensors (linear without a bias) become None;
//  - shapes are specialized: reshape's target, sum_to's shape are attributes.
// Tracing is per thread. By default it records forward ops only: backward()/grad() and custom
// Functions refuse to run under a trace (their work is not an op of the op set). A traced graph
// runs under the executor (engine/jit/executor.h) with the engine's own tensors and ops.
//
// Note [Tracing gradients]
// TraceMode::kWithGradients lets the program call grad(), as jax.jit traces through jax.grad and
// AOTAutograd through the autograd engine: the engine runs its backward as usual, and the ops
// each derivative formula calls (Note [Derivative spec]) are recorded like the program's own, so
// the graph holds the forward and every derivative the program asked for, nested ones included,
// as plain ops. Such a graph needs no autograd to run: its gradients are already in it
// (jit::compile, engine/jit/compile.h). What the engine decides from the graph's structure (which
// nodes run, which formulas per-call needs_input_grad skips, which slots are saved) is fixed at
// trace time, as the control flow of any trace is. In this mode:
//  - the engine's own copies of a value (a saved value unpacked: a new tensor on the same memory,
//    with the same shape and offset) stand for that value;
//  - backward() into .grad and custom Functions refuse to run: .grad is a side effect outside the
//    traced values, and a Function's backward is not an op of the op set;
//  - formulas that run as one fused kernel (Note [Fused formula kernels]) run as their composed
//    ops, as under any trace.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/jit/ir.h"
#include "engine/node.h"
#include "ops/spec.h"
#include "ops/trace_hook.h"

namespace ag::jit {

// TracingScope uses it for programs; differentiate() for the formulas of a gradient graph.
enum class TraceMode { kForward, kWithGradients };

// What a trace knows: which IR value each tensor stands for, and the graph ops are appended to.
class TracingState final : public ops::TraceHook {
 public:
  explicit TracingState(Graph& graph, TraceMode mode = TraceMode::kForward)
      : graph_(graph), mode_(mode) {}

  // From now on `t` stands for `v`.
  void bind(const Tensor& t, Value* v);
  // The value `t` stands for; a tensor no traced op made becomes a constant (None if undefined).
  Value* valueOf(const Tensor& t);
  Graph& graph() const { return graph_; }

  void record_op(const ops::OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                 const Tensor& result, const ops::OpAttrs& attrs) override;
  bool records_gradients() const override { return mode_ == TraceMode::kWithGradients; }

  // The shape, dtype and device of each value bound so far, by value id (Note [Value ids]);
  // an id no tensor was bound to has an empty entry.
  const std::vector<std::optional<TensorMeta>>& metas() const { return metas_; }

 private:
  // Under kWithGradients, the value a tensor on the same memory with the same layout stands for
  // (the latest such, as an in-place write rebinds); null if none.
  Value* sameLayoutValue(const Tensor& t) const;

  Graph& graph_;
  TraceMode mode_;
  std::unordered_map<const TensorImpl*, Value*> values_;
  std::vector<Ref<TensorImpl>> keep_alive_;  // so that no address is reused while tracing
  std::unordered_map<const Storage*, std::vector<const TensorImpl*>> storages_;  // bound, in order
  std::vector<std::optional<TensorMeta>> metas_;
};

// A value's shape, dtype and device as the trace saw them (`metas` from TracingScope::finish), or
// null for a value the trace did not record (one a pass made afterwards).
inline const TensorMeta* tracedMeta(const std::vector<std::optional<TensorMeta>>& metas,
                                    const Value* v) {
  return v->id() < metas.size() && metas[v->id()] ? &*metas[v->id()] : nullptr;
}

class TracingScope {
 public:
  // Starts tracing on this thread; `inputs` become the graph's inputs (defined tensors, no two of
  // them sharing memory: AliasDb assumes distinct inputs).
  explicit TracingScope(const TensorList& inputs, TraceMode mode = TraceMode::kForward);
  ~TracingScope();
  TracingScope(const TracingScope&) = delete;
  TracingScope& operator=(const TracingScope&) = delete;

  // Stops tracing and returns the graph, whose outputs are the values `outputs` stand for.
  // With `metas`, also hands over TracingState::metas().
  std::unique_ptr<Graph> finish(const TensorList& outputs,
                                std::vector<std::optional<TensorMeta>>* metas = nullptr);

 private:
  std::unique_ptr<Graph> graph_;
  std::optional<TracingState> state_;
  std::optional<ops::TraceHookGuard> hook_;
};

// trace(fn, inputs): runs fn(inputs) under a TracingScope and returns the graph.
std::unique_ptr<Graph> trace(const std::function<TensorList(const TensorList&)>& fn,
                             const TensorList& inputs);

}  // namespace ag::jit
