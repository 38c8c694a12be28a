// Writes an engine/jit graph as TorchScript IR, the text torch._C.parse_ir reads, so that
// PyTorch's own create_autodiff_subgraphs runs on exactly the graph ours does (seed 002's peer).
// TorchScript passes attributes as constant inputs: `aten::transpose[dim0=0, dim1=1](%x)` becomes
// `aten::transpose(%x, %i0, %i1)` with `%i0 : int = prim::Constant[value=0]()` hoisted to the top
// (one constant per distinct value), and add/add_ get their `alpha` (1).
#pragma once

#include <string>

#include "engine/jit/ir.h"

namespace ag::paper {

// Throws jit::IrError for a node kind it has no TorchScript signature for, or a subgraph.
std::string to_torchscript_ir(const jit::Graph& graph);

}  // namespace ag::paper
