// Note [Gradient graphs]
// A DifferentiableGraph runs as one autograd node (Note [Differentiable graphs]); its backward is
// a gradient graph derived symbolically from the same derivative specs the eager ops use (Note
// [Derivative spec], ops/spec.h): differentiate() evaluates each node's formulas on placeholder
// tensors of the right shapes under a trace (Note [Tracing]), so the ops a formula calls become
// the gradient graph's nodes, exactly the ops eager backward would run. For a segment of aten
// nodes n_1..n_k the graph is built as eager backward runs them, newest node first:
//
//   for n = n_k .. n_1, if n's output has a gradient g:
//     for each input i of n that has a formula (a *block*):
//       contribution = formula_i(g, the slots its uses list names), summed to input i's shape
//     the gradient of input i  +=  contribution           (prim::AutogradAdd)
//
// The graph's inputs are the gradients the node receives, then the forward values the formulas
// read; its outputs are the gradients of the segment's inputs. Which forward values are kept,
// and which blocks run, are decided per call, as for an eager node:
//  - saves (at forward): a block is live if its input requires grad (Note [Guarded saves]; with
//    guard_saves off, if its node would have been recorded); the values live blocks read are
//    kept, each once.
//  - runs (per backward call): a block runs iff its node's output received a gradient and its
//    input's gradient is needed by this call (Call::needs_input_grad of the segment inputs it
//    leads to: Note [Per-call view]); only the running blocks' instructions execute, and each
//    counts as one formula evaluated under the spec's own counter key, as eager does.
// prim::AutogradAdd passes an undefined side through, as the engine's sum does.
//
// Note [Contributions in eager order]
// Gradients of a segment's *inputs* are not summed inside the gradient graph: each block's
// contribution to an input is a result of its own, with its own edge to the input's producer,
// in the order eager backward would send them (newest node first, inputs in order). The engine
// then sums them into the producer's buffer one at a time, as it sums eager nodes' results, so
// the sum is associated exactly as in eager even when other nodes' gradients of the same tensor
// arrive first (floating-point addition is not associative: (e + a) + b != e + (a + b)).
// Each is also sent *when* eager would send it: right after its node's formulas and the sums
// into the node's earlier inputs, before the next node's formulas (Call::send_now), not once
// the whole graph has run. Under create_graph the engine's sums are recorded ops, and their
// order of creation is the order in which a later backward runs them (Note [Sequence number],
// engine/node.h), hence the order in which they add into the buffers they share with the
// formulas' ops (add and sub pass their gradient on as is, so a sum and a formula often read
// one tensor): sums made at the end would change that order, and the last bits of second
// derivatives. The gradient graph thus records, op for op and in the same order, what the
// eager nodes' backward records, and second derivatives through a group are bitwise eager's.
//
// A forward value that a formula reads and that the segment computes is a *temporary*. To keep
// create_graph exact it becomes one more output of the autograd node (as PyTorch's autodiff
// captures temporaries as outputs): unpacked in backward it has the node as grad_fn, so a
// gradient of the gradient flows back through the node, whose gradient graph adds it to the
// temporary's gradient before the temporary's own formulas run.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/counters.h"
#include "engine/jit/code.h"
#include "engine/jit/ir.h"
#include "engine/node.h"

namespace ag::jit {

// A run of aten nodes (of one group's body) that runs as one autograd node. Its values are
// numbered: its inputs first, then the output of each node in order.
struct Segment {
  std::vector<const Node*> nodes;             // in order
  std::vector<const Value*> inputs;           // read by the nodes, defined before them
  std::vector<const Value*> outputs;          // defined by them, read after them or returned
  std::vector<std::vector<int>> node_inputs;  // per node: its inputs' value numbers

  Segment(std::vector<const Node*> nodes, std::vector<const Value*> inputs,
          std::vector<const Value*> outputs);
  size_t numValues() const { return inputs.size() + nodes.size(); }
  int outputOf(size_t node) const { return static_cast<int>(inputs.size() + node); }
  const Value* value(int i) const;
  int indexOf(const Value* v) const { return index_.at(v); }

 private:
  std::unordered_map<const Value*, int> index_;
};

// A value's type at run time (undefined: None).
struct ValueMeta {
  bool defined = false;
  TensorMeta meta;
  bool operator==(const ValueMeta& o) const;
};

struct Gradient {
  // A formula of one node of the segment, for one of its inputs.
  struct Block {
    int node;                // position in the segment
    size_t input;            // the input it is the formula of
    int source, target;      // value numbers: the node's output and input `input`
    std::vector<int> reads;  // the forward values it reads, as indices into `saved`
    const CounterKey* key;   // the spec's counter key for it ("mul:other")
    // For messages: the op's name ("mm") and its name for each value read ("mat2"), so that a
    // saved value written in place is named as the op's own node names it.
    const std::string* op = nullptr;
    std::vector<const char*> read_names;
  };

  // The autograd node's slots (the gradients it receives): the segment's outputs, then the
  // temporaries. The gradient graph's first inputs are their gradients, in this order.
  std::vector<int> slots;  // value numbers
  // The forward values some formula reads (value numbers): the gradient graph's next inputs.
  std::vector<int> saved;
  std::vector<std::string> saved_names;                // for messages and describe_graph
  std::vector<Block> blocks;                           // by node, in forward order
  std::vector<std::pair<size_t, size_t>> node_blocks;  // per node: its blocks [first, last)
  std::vector<TensorMeta> slot_meta;                   // per slot

  std::unique_ptr<Graph> graph;  // the gradient graph
  std::unique_ptr<Code> code;
  // The autograd node's results, one per contribution to a segment input's gradient, in the
  // order eager backward sends them (Note [Contributions in eager order]): the input it is for,
  // and its slot in `code`'s frame.
  size_t num_inputs = 0;  // the segment's
  std::vector<int> contribution_input;
  std::vector<int> contribution_slot;
  std::vector<size_t> contribution_after;  // how many instructions of `code` precede its send
  std::vector<int> instruction_block;      // per instruction of `code`: its block, or -1 (a sum)
};

// Derives the gradient graph of `segment`, whose values have the types `metas` (by value
// number). Runs each formula once on zero-filled placeholders.
std::unique_ptr<const Gradient> differentiate(const Segment& segment,
                                              const std::vector<ValueMeta>& metas);

}  // namespace ag::jit
