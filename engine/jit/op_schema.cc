#include "engine/jit/op_schema.h"

#include <unordered_map>

namespace ag::jit {
namespace {

constexpr Type T = Type::Tensor;
constexpr Type L = Type::TensorList;
constexpr Type F = Type::Float;

OpSchema pure(std::string name, std::vector<Type> in, std::vector<Type> out = {T}) {
  OpSchema s;
  s.name = std::move(name);
  s.inputs = std::move(in);
  s.outputs = std::move(out);
  s.differentiable = true;
  return s;
}

OpSchema view(std::string name, std::vector<AttributeSpec> attrs) {
  OpSchema s = pure(std::move(name), {T});
  s.attributes = std::move(attrs);
  s.output_aliases_input = 0;
  return s;
}

OpSchema inPlace(std::string name) {
  OpSchema s;
  s.name = std::move(name);
  s.inputs = {T, T};
  s.outputs = {T};
  s.output_aliases_input = 0;
  s.written_inputs = {0};
  return s;
}

std::vector<OpSchema> buildRegistry() {
  std::vector<OpSchema> ops;
  // Elementwise forward ops (binary ones broadcast).
  for (const char* name : {"aten::add", "aten::sub", "aten::mul"}) ops.push_back(pure(name, {T, T}));
  for (const char* name : {"aten::neg", "aten::exp", "aten::tanh", "aten::sigmoid", "aten::relu"})
    ops.push_back(pure(name, {T}));
  ops.push_back(pure("aten::sum", {T}));  // sum of all elements: a 0-dim tensor
  ops.push_back(pure("aten::mul_scalar", {T, F}));

  // Views: the output shares storage with the input.
  ops.push_back(view("aten::transpose", {{"dim0", AttributeKind::Int}, {"dim1", AttributeKind::Int}}));
  ops.push_back(view("aten::reshape", {{"shape", AttributeKind::Ints}}));
  ops.push_back(view("aten::select", {{"dim", AttributeKind::Int}, {"index", AttributeKind::Int}}));

  // In-place ops: write their first input and return it.
  ops.push_back(inPlace("aten::add_"));
  ops.push_back(inPlace("aten::mul_"));

  // Containers.
  OpSchema construct;
  construct.name = "prim::ListConstruct";
  construct.inputs = {T};
  construct.variadic_inputs = true;
  construct.outputs = {L};
  construct.inputs_escape_into_container = true;
  ops.push_back(construct);

  OpSchema unpack;
  unpack.name = "prim::ListUnpack";
  unpack.inputs = {L};
  unpack.outputs = {T};
  unpack.variadic_outputs = true;
  unpack.outputs_are_wildcards = true;
  ops.push_back(unpack);

  OpSchema cat = pure("aten::cat", {L});
  cat.attributes = {{"dim", AttributeKind::Int}};
  ops.push_back(cat);

  // Immutable scalars.
  OpSchema constant;
  constant.name = "prim::Constant";
  constant.outputs = {F};
  constant.attributes = {{"value", AttributeKind::Float}};
  ops.push_back(constant);

  // Side effect: appends its input's current contents to the output log.
  OpSchema print;
  print.name = "prim::Print";
  print.inputs = {T};
  print.has_side_effects = true;
  ops.push_back(print);

  // A group made by create_autodiff_subgraphs; its signature is its subgraph's.
  OpSchema group;
  group.name = kinds::kDifferentiableGraph;
  group.differentiable = true;
  ops.push_back(group);
  return ops;
}

}  // namespace

const std::vector<OpSchema>& allSchemas() {
  static const std::vector<OpSchema> registry = buildRegistry();
  return registry;
}

const OpSchema* lookupSchema(const std::string& name) {
  static const std::unordered_map<std::string, const OpSchema*> by_name = [] {
    std::unordered_map<std::string, const OpSchema*> m;
    for (const OpSchema& s : allSchemas()) m[s.name] = &s;
    return m;
  }();
  auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : it->second;
}

const char* attributeKindName(AttributeKind k) {
  switch (k) {
    case AttributeKind::Int: return "int";
    case AttributeKind::Float: return "float";
    case AttributeKind::Ints: return "int[]";
  }
  return "?";
}

}  // namespace ag::jit
