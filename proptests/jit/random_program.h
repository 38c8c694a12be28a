// Random engine programs for the JIT's properties: ordinary code calling the op set's ops
// (pure ops, views, in-place ops, constants, matrix products), which the tracer records.
//
// A JitProgramSpec is plain data that RapidCheck generates and shrinks; runProgram runs any spec on
// engine tensors. Each step names an op and its operands as indices *taken modulo the number of
// tensors so far*, searching forward for one of a usable shape, so every shrink still runs; a
// step with no usable operand is skipped. In-place ops write only tensors the program computed
// (never an input, nor a constant the trace would bake in: torch.jit.trace has the same rule).
#pragma once

#include <rapidcheck.h>

#include <ostream>
#include <vector>

#include "engine/tensor.h"
#include "proptests/op_traits.h"

namespace ag::jit {
class Node;
}  // namespace ag::jit

namespace ag::proptests {

// The JIT's names (engine/jit), for the JIT's generators and properties; Node is the IR's.
using namespace ag::jit;
using jit::Node;

struct JitStepSpec {
  unsigned op = 0;
  unsigned a = 0, b = 0;  // operands, modulo the tensors so far
  unsigned attr = 0;      // scalars, target shapes, dims
};

struct JitProgramSpec {
  unsigned num_inputs = 1;  // 1..3; input i is [2, 3] for even i, [3, 2] for odd i
  std::vector<JitStepSpec> steps;
};

// The program's inputs: deterministic values, leaves that require grad if asked.
TensorList programInputs(const JitProgramSpec& spec, bool requires_grad);
// Runs the program with the engine's ops; returns the tensors it computed that nothing later
// read, and the last one it computed (each once).
TensorList runProgram(const JitProgramSpec& spec, const TensorList& inputs);

// Programs of up to 24 steps, each step's op drawn uniformly from the list at any size.
rc::Gen<JitProgramSpec> genProgramSpec();

// The losses the JIT's properties differentiate, over the tensors that require grad (undefined
// when none does): the sum of their elements (first order), and the sum of their squares (the
// second order, over first-order gradients).
Tensor sumOfRequiringGrad(const TensorList& ts);
Tensor sumOfSquares(const TensorList& grads);

// RapidCheck prints counterexamples through this: the traced graph's text form.
void showValue(const JitProgramSpec& spec, std::ostream& os);

}  // namespace ag::proptests
