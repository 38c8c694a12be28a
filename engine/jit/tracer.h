// Note [Tracing]
// Running ordinary engine code under a TracingScope records the ops it runs as an IR graph, as
// torch.jit.trace does:
//
//   jit::TracingScope scope({x, w});           // x and w become the graph's inputs
//   Tensor y = ops::tanh(ops::mm(x, w));       // runs as usual, and is recorded
//   std::unique_ptr<jit::Graph> g = scope.finish({y});
//
// Every op reports itself through the op set's tracing hook (Note [Tracing hook], ops/spec.h) as
// `aten::<spec name>` with the spec's attributes. The trace follows tensors, not variables:
//  - an op's result stands for the new value; a view's result aliases its input in the IR, as at
//    run time (the op's AliasKind);
//  - an in-place op's result is a new value standing for the written tensor from then on, so
//    later reads see the write (`%a2 = aten::add_(%a, %b)`; AliasDb orders reads of %a before
//    the write);
//  - a tensor that no traced op made (a factory's result, a tensor captured from outside) becomes
//    a prim::Constant holding that very tensor, as torch.jit.trace bakes constants in; undefined
//    tensors (linear without a bias) become None;
//  - shapes are specialized: reshape's target, sum_to's shape are attributes.
// Tracing is per thread and records forward ops only: backward()/grad() and custom Functions
// refuse to run under a trace (their work is not an op of the op set). A traced graph runs
// under the executor (engine/jit/executor.h) with the engine's own tensors and ops.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/jit/ir.h"
#include "ops/spec.h"

namespace ag::jit {

// What a trace knows: which IR value each tensor stands for, and the graph ops are appended to.
// TracingScope uses it for programs; differentiate() for the formulas of a gradient graph.
class TracingState final : public ops::TraceHook {
 public:
  explicit TracingState(Graph& graph) : graph_(graph) {}

  // From now on `t` stands for `v`.
  void bind(const Tensor& t, Value* v);
  // The value `t` stands for; a tensor no traced op made becomes a constant (None if undefined).
  Value* valueOf(const Tensor& t);
  Graph& graph() const { return graph_; }

  void record_op(const ops::OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                 const Tensor& result, const ops::OpAttrs& attrs) override;

 private:
  Graph& graph_;
  std::unordered_map<const TensorImpl*, Value*> values_;
  std::vector<Ref<TensorImpl>> keep_alive_;  // so that no address is reused while tracing
  std::unordered_map<const Storage*, const Value*> storages_;  // of bound tensors
};

class TracingScope {
 public:
  // Starts tracing on this thread; `inputs` become the graph's inputs (defined tensors, no two of
  // them sharing memory: AliasDb assumes distinct inputs).
  explicit TracingScope(const TensorList& inputs);
  ~TracingScope();
  TracingScope(const TracingScope&) = delete;
  TracingScope& operator=(const TracingScope&) = delete;

  // Stops tracing and returns the graph, whose outputs are the values `outputs` stand for.
  std::unique_ptr<Graph> finish(const TensorList& outputs);

 private:
  std::unique_ptr<Graph> graph_;
  std::optional<TracingState> state_;
  std::optional<ops::TraceHookGuard> hook_;
};

// trace(fn, inputs): runs fn(inputs) under a TracingScope and returns the graph.
std::unique_ptr<Graph> trace(const std::function<TensorList(const TensorList&)>& fn,
                             const TensorList& inputs);

}  // namespace ag::jit
