// A graph compiled for the executor (PyTorch's jit::Code): one instruction per node, in node
// order, reading and writing a frame of IValues (one slot per value). Attributes are converted
// to the ops' attribute structs once, here, not on every run.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/jit/executor.h"
#include "engine/jit/ir.h"
#include "ops/spec.h"

namespace ag::jit {

class DifferentiableGraphOp;

class Code {
 public:
  struct Instruction;  // one node's work (code.cc)

  // `graph` must be verified, outlive the Code and stay unchanged.
  explicit Code(const Graph& graph);
  ~Code();
  Code(const Code&) = delete;
  Code& operator=(const Code&) = delete;

  const Graph& graph() const { return graph_; }
  size_t numSlots() const { return slot_values_.size(); }
  int slotOf(const Value* v) const { return slots_.at(v); }
  size_t numInstructions() const;

  // Runs every instruction (or only those whose entry in `mask` is set), reading and writing
  // `frame` (numSlots() entries; the graph inputs' slots set by the caller).
  void run(std::vector<IValue>& frame, const RunOptions& options,
           const std::vector<char>* mask = nullptr) const {
    run(frame, options, mask, 0, numInstructions());
  }
  // The same for instructions [first, last) only.
  void run(std::vector<IValue>& frame, const RunOptions& options, const std::vector<char>* mask,
           size_t first, size_t last) const;
  // Sets the inputs (type-checked), runs, and returns the outputs. Unless options.observe is
  // set, each value is released after its last reader (Note [Releasing dead values]).
  std::vector<IValue> runGraph(const std::vector<IValue>& inputs, const RunOptions& options) const;

 private:
  void run(std::vector<IValue>& frame, const RunOptions& options, const std::vector<char>* mask,
           size_t first, size_t last, bool release_dead) const;
  void execute(const Instruction& in, std::vector<IValue>& frame, const RunOptions& options) const;
  // Sets `in.dead_after`, `in.sums_into`, and the pairs of `adds_into` and `fused_operand`
  // (Note [Releasing dead values]).
  void findLastReaders();
  void findFusedSum(Instruction& sum, const std::vector<int>& before_last);

  const Graph& graph_;
  std::unordered_map<const Value*, int> slots_;
  std::vector<const Value*> slot_values_;
  std::vector<Instruction> instructions_;
};

}  // namespace ag::jit
