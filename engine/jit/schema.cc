#include "engine/jit/schema.h"

#include <algorithm>
#include <memory>
#include <unordered_map>

namespace ag::jit {
namespace {

constexpr Type T = Type::Tensor;
constexpr Type L = Type::TensorList;

// The IR kind of each field type of the ops' attribute structs (ops/slots.h).
struct KindOf {
  std::vector<AttributeSpec>& out;
  void operator()(const char* name, double) { out.push_back({name, AttributeKind::Float}); }
  void operator()(const char* name, int64_t) { out.push_back({name, AttributeKind::Int}); }
  void operator()(const char* name, bool) { out.push_back({name, AttributeKind::Int}); }
  template <typename IntList>  // Shape, targets, Device: integers
  void operator()(const char* name, const IntList&) {
    out.push_back({name, AttributeKind::Ints});
  }
};

// Each field as an IR attribute value.
struct ToIr {
  Attributes& out;
  void operator()(const char* name, double v) { out[name] = v; }
  void operator()(const char* name, int64_t v) { out[name] = v; }
  void operator()(const char* name, bool v) { out[name] = int64_t{v}; }
  void operator()(const char* name, const Shape& v) { out[name] = std::vector<int64_t>(v); }
  void operator()(const char* name, const std::shared_ptr<const std::vector<int64_t>>& v) {
    out[name] = v ? *v : std::vector<int64_t>();
  }
  void operator()(const char* name, const Device& d) {
    out[name] = std::vector<int64_t>{static_cast<int64_t>(d.type), d.index};
  }
};

// Each field from its IR attribute value.
struct FromIr {
  const Node& node;
  template <typename V>
  const V& get(const char* name) const {
    auto it = node.attrs().find(name);
    if (it == node.attrs().end()) {
      throw IrError(node.kind() + ": missing attribute '" + name + "'");
    }
    if (const V* v = std::get_if<V>(&it->second)) return *v;
    throw IrError(node.kind() + ": attribute '" + name + "' has the wrong kind");
  }
  void operator()(const char* name, double& v) const { v = get<double>(name); }
  void operator()(const char* name, int64_t& v) const { v = get<int64_t>(name); }
  void operator()(const char* name, bool& v) const { v = get<int64_t>(name) != 0; }
  void operator()(const char* name, Shape& v) const { v = get<std::vector<int64_t>>(name); }
  void operator()(const char* name, std::shared_ptr<const std::vector<int64_t>>& v) const {
    v = std::make_shared<const std::vector<int64_t>>(get<std::vector<int64_t>>(name));
  }
  void operator()(const char* name, Device& d) const {
    const auto& v = get<std::vector<int64_t>>(name);
    if (v.size() != 2 || (v[0] != 0 && v[0] != 1) || v[1] < 0) {
      throw IrError(node.kind() + ": attribute '" + name +
                    "' must be a device [type, index] with type 0 (CPU) or 1 (CUDA)");
    }
    d = Device{static_cast<DeviceType>(v[0]), static_cast<int>(v[1])};
  }
};

// aten::<name>: the op's spec, read as a schema (Note [Op schema] in ops/schema.h).
OpSchema fromSpec(const ops::OpSpec& spec) {
  OpSchema s;
  s.name = "aten::" + spec.name();
  s.inputs.assign(spec.num_inputs(), T);
  s.outputs = {T};
  ops::OpAttrs prototype = spec.forward().attrs;
  std::visit([&](auto& a) { a.fields(KindOf{s.attributes}); }, prototype);
  switch (spec.forward().alias) {
    case ops::AliasKind::kPure:
      break;
    case ops::AliasKind::kView:
      s.output_aliases_input = 0;
      break;
    case ops::AliasKind::kInPlace:
      s.output_aliases_input = 0;
      s.written_inputs = {0};
      break;
    case ops::AliasKind::kWildcard:
      s.outputs_are_wildcards = true;
      break;
  }
  // Only ops that write nothing and have a derivative can run inside a differentiable group, and
  // only those whose formulas read the graph's values: a forward value (where's copy of its mask,
  // Note [Masks are 0 and 1] in ops/select.cc) is not one, so such an op runs on its own node.
  bool reads_forward_values = false;
  for (size_t j = 0; j < spec.num_slots(); ++j) {
    reads_forward_values = reads_forward_values || spec.slot(j).kind == ops::Slot::Kind::kForward;
  }
  s.differentiable = spec.has_derivative() && !reads_forward_values &&
                     (spec.forward().alias == ops::AliasKind::kPure ||
                      spec.forward().alias == ops::AliasKind::kView);
  s.spec = &spec;
  return s;
}

std::vector<OpSchema> primSchemas() {
  std::vector<OpSchema> ops;
  OpSchema constant;  // outputs: one, typed by the value (Graph::create, the verifier)
  constant.name = kinds::kConstant;
  ops.push_back(constant);

  OpSchema construct;
  construct.name = kinds::kListConstruct;
  construct.inputs = {T};
  construct.variadic_inputs = true;
  construct.outputs = {L};
  construct.inputs_escape_into_container = true;
  ops.push_back(construct);

  OpSchema unpack;
  unpack.name = kinds::kListUnpack;
  unpack.inputs = {L};
  unpack.outputs = {T};
  unpack.variadic_outputs = true;
  unpack.outputs_are_wildcards = true;
  ops.push_back(unpack);

  OpSchema print;
  print.name = kinds::kPrint;
  print.inputs = {T};
  print.has_side_effects = true;
  ops.push_back(print);

  OpSchema add;
  add.name = kinds::kAutogradAdd;
  add.inputs = {T, T};
  add.outputs = {T};
  ops.push_back(add);

  // A group made by create_autodiff_subgraphs; its signature is its subgraph's.
  OpSchema group;
  group.name = kinds::kDifferentiableGraph;
  group.differentiable = true;
  ops.push_back(group);
  return ops;
}

struct Registry {
  std::vector<std::unique_ptr<OpSchema>> owned;
  std::unordered_map<std::string, const OpSchema*> by_name;
  std::vector<const OpSchema*> sorted;

  Registry() {
    for (OpSchema& s : primSchemas()) add(std::move(s));
    for (const ops::OpSpec* spec : ops::all_op_specs()) add(fromSpec(*spec));
    for (const auto& s : owned) sorted.push_back(s.get());
    std::sort(sorted.begin(), sorted.end(),
              [](const OpSchema* a, const OpSchema* b) { return a->name < b->name; });
  }
  void add(OpSchema s) {
    owned.push_back(std::make_unique<OpSchema>(std::move(s)));
    by_name[owned.back()->name] = owned.back().get();
  }
};

const Registry& registry() {
  static const Registry r;  // built on first use, after every spec has registered itself
  return r;
}

}  // namespace

const OpSchema* lookupSchema(const std::string& name) {
  const auto& by_name = registry().by_name;
  auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : it->second;
}

const std::vector<const OpSchema*>& allSchemas() { return registry().sorted; }

const char* attributeKindName(AttributeKind k) {
  switch (k) {
    case AttributeKind::Int:
      return "int";
    case AttributeKind::Float:
      return "float";
    case AttributeKind::Ints:
      return "int[]";
    case AttributeKind::Tensor:
      return "Tensor";
  }
  return "?";
}

ops::OpAttrs toOpAttrs(const Node& n) {
  const OpSchema* s = n.schema();
  if (s == nullptr || s->spec == nullptr) throw IrError(n.kind() + " is not an op of the op set");
  ops::OpAttrs attrs = s->spec->forward().attrs;  // the op's own alternative
  std::visit([&](auto& a) { a.fields(FromIr{n}); }, attrs);
  return attrs;
}

Attributes toAttributes(const ops::OpAttrs& attrs) {
  Attributes out;
  ops::OpAttrs copy = attrs;  // fields() hands out references to the fields
  std::visit([&](auto& a) { a.fields(ToIr{out}); }, copy);
  return out;
}

}  // namespace ag::jit
