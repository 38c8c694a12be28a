// The IR's operators and what alias analysis, the verifier, the pass and the executor need to
// know about each.
//
// `aten::<name>` is the op set's op <name>: its schema is derived from the op's spec (Note [Op
// schema] in ops/schema.h): one Tensor input per input of the spec, one Tensor output, the
// attributes its attribute struct names, and its aliasing kind. There is no second table: an op
// added to ops/ with a forward is an IR operator. The `prim::` operators are the IR's own:
//   prim::Constant            a float, a tensor (a traced constant) or None (undefined tensor)
//   prim::ListConstruct       a Tensor[] of its inputs (they escape into a container)
//   prim::ListUnpack          the tensors of a list (wildcards: any tensor that entered a list)
//   prim::Print               appends its input's text to the run's log (a side effect)
//   prim::AutogradAdd         a + b where either may be undefined (gradient graphs' sums)
//   prim::DifferentiableGraph a group made by create_autodiff_subgraphs
//
// Aliasing facts are stated as fields instead of PyTorch's "(a!)" annotation strings; see Note
// [Alias semantics of ops] in alias_db.h for how AliasDb reads them.
#pragma once

#include <string>
#include <vector>

#include "engine/jit/ir.h"
#include "ops/spec.h"

namespace ag::jit {

enum class AttributeKind { Int, Float, Ints, Tensor };

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

  // aten:: operators: the op set's spec, which runs the op and differentiates it.
  const ops::OpSpec* spec = nullptr;
};

// nullptr for an unknown op.
const OpSchema* lookupSchema(const std::string& name);
// All operators (prim::Param/prim::Return excluded), sorted by name.
const std::vector<const OpSchema*>& allSchemas();

const char* attributeKindName(AttributeKind k);

// An aten:: node's attributes as the op's attribute struct (the alternative of ops::OpAttrs its
// spec names), and back. Throws IrError naming the node for a missing or ill-kinded attribute.
ops::OpAttrs toOpAttrs(const Node& n);
Attributes toAttributes(const ops::OpAttrs& attrs);

}  // namespace ag::jit
