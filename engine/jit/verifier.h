#pragma once

#include "engine/jit/ir.h"

namespace ag::jit {

// Checks that a graph is well formed and throws IrError naming the first
// problem found:
//  - unknown op;
//  - wrong arity (inputs or outputs) for the op's schema;
//  - type mismatch between an operand and the schema;
//  - missing or ill-kinded attributes;
//  - use before def (an operand defined later, or in another graph);
//  - a prim::DifferentiableGraph whose subgraph does not match its signature
//    (subgraphs are verified recursively);
//  - internal bookkeeping (use lists, value offsets) out of sync.
void verify(const Graph& g);

}  // namespace ag::jit
