// The executor: runs IR graphs on the engine's own tensors and ops.
//
//   jit::GraphExecutor exec(*graph);              // compiles once (graph verified first)
//   TensorList out = exec.run(TensorList{x, w});  // any number of runs
//
// Each aten:: node calls its op through the op's spec (Note [Op schema], ops/schema.h), so a run is
// exactly the eager program: the same kernels, the same aliasing (a view shares storage, an
// in-place op writes its input), and, under grad mode, the same autograd nodes. A
// prim::DifferentiableGraph runs its body as one unit and becomes one autograd node whose
// backward is the body's gradient graph (Note [Differentiable graphs] in
// differentiable_graph.h). CPU and CUDA tensors run alike: the ops dispatch on the device.
// Several threads may run one executor at once: each run has its own frame and autograd nodes;
// what runs share (compiled code, a group's gradient graphs) is read-only once made, and a
// group derives its gradient graphs under a lock (executor_concurrency_test, also under TSan).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "engine/jit/ir.h"

namespace ag::jit {

class Code;

// A run-time value: a tensor (possibly undefined: None), a list of tensors, or a float.
using IValue = std::variant<Tensor, TensorList, double>;
// Exact text of a value (shape and every element with 17 significant digits): two values print
// the same iff they hold the same numbers.
std::string toString(const IValue& v);

using PrintLog = std::vector<std::string>;

struct RunOptions {
  PrintLog* log = nullptr;  // prim::Print appends its input's text here
  // Called with every value a run defines (graph inputs, node outputs, also inside groups), e.g.
  // to compare the storage values share with what AliasDb says.
  std::function<void(const Value*, const IValue&)> observe;
};

class GraphExecutor {
 public:
  // `graph` must outlive the executor and stay unchanged. Throws IrError if it does not verify.
  explicit GraphExecutor(const Graph& graph);
  ~GraphExecutor();
  GraphExecutor(const GraphExecutor&) = delete;
  GraphExecutor& operator=(const GraphExecutor&) = delete;

  // Throws IrError when the inputs do not match the graph's signature, ag::Error when an op
  // rejects its arguments.
  std::vector<IValue> run(const std::vector<IValue>& inputs, const RunOptions& options = {}) const;
  // For graphs whose inputs and outputs are all tensors.
  TensorList run(const TensorList& inputs) const;

 private:
  std::unique_ptr<Code> code_;
};

// One run of `graph` (compiled for this run only).
std::vector<IValue> runGraph(const Graph& graph, const std::vector<IValue>& inputs,
                             const RunOptions& options = {});

}  // namespace ag::jit
