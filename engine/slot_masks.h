#pragma once

#include <vector>

#include "engine/node.h"

namespace ag {

// The one interface between the backward pass and the nodes that stand for several ops (Note
// [Nodes that stand for several ops], engine/node.h). The engine knows nothing of such a node's
// ops: it hands each one that phase 3 marks (Note [The backward pass], engine/engine.cc) to the
// call's SlotMasks, which the node's kind made (Node::new_slot_masks()) and which live beside that
// kind (engine/jit/differentiable_graph.cc). One SlotMasks per backward call, owned by the call:
// nothing per-call is written into the nodes (Note [Per-call view]).
class SlotMasks {
 public:
  // What phase 3 of one backward call lets finish() read and change.
  class Marks {
   public:
    virtual ~Marks() = default;
    virtual const EdgeList& roots() const = 0;
    virtual const std::vector<Node*>& post_order() const = 0;  // children before parents
    virtual bool runs(const Node& node) const = 0;
    // Whether the gradient sent along `edge` is used where it arrives: by apply(), or captured.
    virtual bool uses_gradient(const Edge& edge) const = 0;
    // `node` does not run after all: the nodes its used gradients go to stop waiting for it.
    virtual void cancel_run(const Node& node) = 0;
  };

  virtual ~SlotMasks() = default;
  // In post-order, for each node of the kind that made these masks and that runs: given which of
  // its next edges count (one entry each), which of its input slots count, because they lead to
  // such an edge through the node's ops. With targets an edge counts if its gradient is used, and
  // the engine uses only the gradients sent into the slots that count. Without targets an edge
  // counts if it leads to a leaf that wants a gradient; the node uses every gradient sent into
  // it, and the slots that count answer needs_input_grad. The result stays valid for the call.
  virtual const std::vector<char>& mark(const Node& node, const std::vector<char>& edge_counts) = 0;
  // With targets, once every node is marked: undo the runs that the masks leave without a
  // gradient to receive, through `marks`.
  virtual void finish(Marks& marks) = 0;
};

}  // namespace ag
