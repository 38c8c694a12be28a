#include "paper/workloads/torchscript_ir.h"

#include <map>
#include <sstream>
#include <vector>

namespace ag::paper {
namespace {

// A kind's TorchScript signature beyond its tensor inputs: the attributes that become constant
// inputs, in schema order, and whether `alpha=1` follows them.
struct Signature {
  std::vector<std::string> attributes;
  bool alpha = false;
  // nll_loss: its targets (our attribute) are a Tensor in TorchScript: a graph input of its own.
  bool targets_input = false;
  // Arguments after those: "None" or an integer.
  std::vector<std::string> trailing = {};
};

const Signature* signature_of(const std::string& kind) {
  static const std::map<std::string, Signature> kSignatures = {
      {"aten::transpose", {{"dim0", "dim1"}}},
      {"aten::reshape", {{"shape"}}},
      {"aten::add", {{}, true}},
      {"aten::add_", {{}, true}},
      {"aten::mul", {}},
      {"aten::tanh", {}},
      {"aten::sigmoid", {}},
      {"aten::linear", {}},
      {"aten::relu", {}},
      {"aten::mm", {}},
      {"aten::log_softmax", {{"dim"}, false, false, {"None"}}},
      {"aten::nll_loss", {{}, false, true, {"None", "1", "-100"}}},
      {"prim::Print", {}},
      {"prim::ListConstruct", {}},
      {"prim::ListUnpack", {}},
  };
  const auto it = kSignatures.find(kind);
  return it == kSignatures.end() ? nullptr : &it->second;
}

const char* torchscript_type(jit::Type t) {
  switch (t) {
    case jit::Type::Tensor:
      return "Tensor";
    case jit::Type::TensorList:
      return "Tensor[]";
    case jit::Type::Float:
      return "float";
  }
  return "Tensor";
}

// The hoisted constants: one value per distinct int and int list.
class Constants {
 public:
  std::string of(const jit::AttributeValue& value) {
    if (const int64_t* i = std::get_if<int64_t>(&value)) return integer(*i);
    if (const double* d = std::get_if<double>(&value)) {
      std::ostringstream name;
      name << "%f" << floats_.size();
      floats_.push_back(name.str());
      text_ << "  " << name.str() << " : float = prim::Constant[value=" << *d << "]()\n";
      return name.str();
    }
    const auto& list = std::get<std::vector<int64_t>>(value);
    const auto it = lists_.find(list);
    if (it != lists_.end()) return it->second;
    std::vector<std::string> items;
    for (int64_t i : list) items.push_back(integer(i));
    const std::string name = "%l" + std::to_string(lists_.size());
    text_ << "  " << name << " : int[] = prim::ListConstruct(";
    for (size_t i = 0; i < items.size(); ++i) text_ << (i ? ", " : "") << items[i];
    text_ << ")\n";
    lists_[list] = name;
    return name;
  }
  std::string none() {
    if (!has_none_) text_ << "  %none : NoneType = prim::Constant()\n";
    has_none_ = true;
    return "%none";
  }
  std::string literal(const std::string& text) {
    return text == "None" ? none() : integer(std::stoll(text));
  }
  std::string text() const { return text_.str(); }

 private:
  std::string integer(int64_t v) {
    const auto it = ints_.find(v);
    if (it != ints_.end()) return it->second;
    const std::string name = "%i" + std::to_string(ints_.size());
    text_ << "  " << name << " : int = prim::Constant[value=" << v << "]()\n";
    ints_[v] = name;
    return name;
  }

  std::ostringstream text_;
  std::map<int64_t, std::string> ints_;
  std::map<std::vector<int64_t>, std::string> lists_;
  std::vector<std::string> floats_;
  bool has_none_ = false;
};

std::string value_name(const jit::Value* v) { return "%v" + v->name(); }

}  // namespace

std::string to_torchscript_ir(const jit::Graph& graph) {
  Constants constants;
  std::ostringstream body;
  std::vector<std::string> extra_inputs;  // nll_loss's targets
  for (const jit::Node* n : graph.nodes()) {
    const Signature* signature = signature_of(n->kind());
    if (signature == nullptr || n->subgraph() != nullptr) {
      throw jit::IrError("to_torchscript_ir: no TorchScript signature for " + n->kind());
    }
    std::vector<std::string> args;
    for (const jit::Value* in : n->inputs()) args.push_back(value_name(in));
    for (const std::string& attribute : signature->attributes) {
      const auto it = n->attrs().find(attribute);
      if (it == n->attrs().end()) {
        throw jit::IrError("to_torchscript_ir: " + n->kind() + " has no attribute " + attribute);
      }
      args.push_back(constants.of(it->second));
    }
    if (signature->targets_input) {
      extra_inputs.push_back("%targets" + std::to_string(extra_inputs.size()));
      args.insert(args.begin() + 1, extra_inputs.back());
    }
    if (signature->alpha) args.push_back(constants.of(int64_t{1}));
    for (const std::string& t : signature->trailing) args.push_back(constants.literal(t));
    body << "  ";
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      body << (i ? ", " : "") << value_name(n->output(i)) << " : "
           << torchscript_type(n->output(i)->type());
    }
    body << (n->outputs().empty() ? "" : " = ") << n->kind() << "(";
    for (size_t i = 0; i < args.size(); ++i) body << (i ? ", " : "") << args[i];
    body << ")\n";
  }
  std::ostringstream out;
  out << "graph(";
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    out << (i ? ", " : "") << value_name(graph.inputs()[i]) << " : "
        << torchscript_type(graph.inputs()[i]->type());
  }
  for (size_t i = 0; i < extra_inputs.size(); ++i) {
    out << (graph.inputs().empty() && i == 0 ? "" : ", ") << extra_inputs[i] << " : Tensor";
  }
  out << "):\n" << constants.text() << body.str() << "  return (";
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    out << (i ? ", " : "") << value_name(graph.outputs()[i]);
  }
  out << ")\n";
  return out.str();
}

}  // namespace ag::paper
