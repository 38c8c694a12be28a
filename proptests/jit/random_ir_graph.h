// Random IR graphs for property tests.
//
// A IrGraphSpec is plain data that RapidCheck generates and shrinks; buildGraph
// turns any IrGraphSpec into a valid graph. Each node spec names an op and its
// operands as indices *taken modulo the number of values defined so far*
// (searching forward from there for the first value of a usable type and
// shape), so every shrink of a spec (fewer nodes, smaller numbers) still
// builds a valid graph; a node with no usable operand is left out.
//
// Graphs mix pure ops, views (reshape/detach), in-place ops (add_,
// mul_), lists (construct/unpack), float constants and prim::Print. All
// shapes are tracked while building, so every graph also runs under the
// executor without a shape error.
#pragma once

#include <rapidcheck.h>

#include <memory>
#include <ostream>
#include <vector>

#include "engine/jit/executor.h"
#include "engine/jit/ir.h"
#include "proptests/op_traits.h"

namespace ag::proptests {

// The JIT's names (engine/jit), for the JIT's generators and properties; Node is the IR's.
using namespace ag::jit;
using jit::Node;

struct IrNodeSpec {
  unsigned op = 0;
  std::vector<unsigned> operands;  // three indices, used modulo the values so far
  unsigned attr = 0;               // picks attributes (dims, shapes, list lengths, constants)
  bool also_return = false;        // make the first output a graph output even if used
};

struct IrGraphSpec {
  std::vector<unsigned> input_shapes;  // one per graph input, index into a fixed menu
  std::vector<IrNodeSpec> nodes;
};

struct BuiltIrGraph {
  std::unique_ptr<Graph> graph;
  std::vector<Shape> input_shapes;
  // Fresh, distinct inputs with deterministic contents.
  std::vector<IValue> makeInputs() const;
};

BuiltIrGraph buildGraph(const IrGraphSpec& spec);

rc::Gen<IrGraphSpec> genGraphSpec();

// RapidCheck prints counterexamples through this: the graph's text form.
void showValue(const IrGraphSpec& spec, std::ostream& os);

}  // namespace ag::proptests
