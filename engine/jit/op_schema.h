// The op registry: for every op, its signature, required attributes and the
// facts alias analysis and the autodiff-subgraph pass need about it.
//
// Aliasing facts are stated directly instead of PyTorch's "(a!)" annotation
// strings; see Note [Alias semantics of ops] in alias_db.h for how AliasDb
// reads them.
#pragma once

#include <string>
#include <vector>

#include "engine/jit/ir.h"

namespace ag::jit {

enum class AttributeKind { Int, Float, Ints };

struct AttributeSpec {
  std::string name;
  AttributeKind kind;
};

struct OpSchema {
  std::string name;
  std::vector<Type> inputs;
  std::vector<Type> outputs;
  // A variadic signature repeats its single declared type any number of times.
  bool variadic_inputs = false;
  bool variadic_outputs = false;
  std::vector<AttributeSpec> attributes;

  // Aliasing.
  int output_aliases_input = -1;    // views and in-place ops: output 0 may alias this input
  std::vector<int> written_inputs;  // in-place ops mutate these inputs
  bool inputs_escape_into_container = false;  // prim::ListConstruct
  bool outputs_are_wildcards = false;         // prim::ListUnpack

  // Scheduling / autodiff.
  bool differentiable = false;  // may be merged into a prim::DifferentiableGraph
  bool has_side_effects = false;
};

// nullptr for an unknown op.
const OpSchema* lookupSchema(const std::string& name);
// All registered ops (prim::Param/prim::Return excluded), in a fixed order.
const std::vector<OpSchema>& allSchemas();

const char* attributeKindName(AttributeKind k);

}  // namespace ag::jit
