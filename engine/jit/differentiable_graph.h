// Note [Differentiable graphs]
// create_autodiff_subgraphs groups differentiable nodes into prim::DifferentiableGraph nodes so
// that each group runs as one unit, forward and backward, as in PyTorch's profiling executor.
// The executor runs a group this way:
//  - its body's ops run under no-grad (they record no nodes of their own);
//  - if grad mode is on and some input requires grad, one autograd node,
//    DifferentiableGraphBackward, is created: its edges go to the group's inputs, it becomes the
//    grad_fn of the outputs that require grad (an output requires grad iff it depends on an
//    input that does, as eager's record() decides op by op), and its backward is the body's
//    gradient graph (Note [Gradient graphs] in differentiate.h), which it runs with the engine's
//    ops: under create_graph those record nodes, so higher derivatives go through it.
//  - the values its formulas read are kept by the guarded-save rule (Note [Guarded saves]), as
//    SavedVariables: an in-place write to one of them before backward fails the version check,
//    as it does in eager.
//  - its formulas run where the ops' own nodes would have run theirs: a formula runs iff its
//    op's output got a gradient, its input's gradient is needed (Call::needs_input_grad), and
//    the op's node would have run at all (Call::on_executed_path); and the engine counts the
//    node's slots, not the node, when it decides whether a gradient sent into it is used,
//    through the slot masks the node makes for each call (Note [Nodes that stand for several
//    ops], engine/node.h; SegmentSlotMasks, differentiable_graph.cc). So a saved value written
//    in place after the group fails a backward call exactly when it would in eager code.
// The gradient graph is derived on a group's first run and reused while the body's values keep
// their shapes, dtypes and devices (the trace specializes shapes anyway).
//
// One exception to "one node": a group that returns a value it also reads runs as several
// nodes. The engine captures the gradient of a value requested by grad(..., inputs) at the slot
// of its grad_fn, before that node runs; if the node were the whole group, the gradient
// captured for a returned value would miss what the group's own readers of it contribute. So
// the body is cut into segments, contiguous runs of nodes, such that no segment returns (or
// hands to a later segment) a value it reads itself, nor the base of a view it returns (written
// in place, the view rewrites its base's history, which must then be a node's output, as in
// eager code); each segment is one node. Most groups are one segment (a traced MLP is); the
// cuts are found once, from the IR.
#pragma once

#include <memory>
#include <vector>

#include "engine/jit/code.h"
#include "engine/jit/differentiate.h"

namespace ag::jit {

class DifferentiableGraphOp {
 public:
  explicit DifferentiableGraphOp(const Node& group);
  ~DifferentiableGraphOp();

  std::vector<IValue> run(const std::vector<IValue>& inputs, const RunOptions& options) const;
  size_t numSegments() const { return segments_.size(); }

 private:
  struct SegmentState;
  void restoreViewFlags(const std::vector<IValue>& inputs, std::vector<IValue>& frame) const;
  void wire(const SegmentState& segment, std::vector<IValue>& frame) const;

  const Node& group_;
  Code body_;
  std::vector<std::unique_ptr<SegmentState>> segments_;
};

// The segments of a group's body (Note [Differentiable graphs]), for tests and the paper.
std::vector<Segment> segmentsOf(const Graph& body);

}  // namespace ag::jit
