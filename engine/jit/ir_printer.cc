// Prints the text form that ir_parser.cc reads back (see ir.h).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "engine/jit/ir.h"

namespace ag::jit {
namespace {

std::string formatDouble(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  std::string s = buf;
  // Keep a float recognisably a float, so it parses back as one.
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void printValueList(std::ostream& os, const ValueList& values, bool with_types) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) os << ", ";
    os << "%" << values[i]->name();
    if (with_types) os << " : " << typeName(values[i]->type());
  }
}

void printNodeHead(std::ostream& os, const Node& n) {
  if (!n.outputs().empty()) {
    printValueList(os, n.outputs(), /*with_types=*/true);
    os << " = ";
  }
  os << n.kind();
  if (!n.attrs().empty()) {
    os << "[";
    bool first = true;
    for (const auto& [name, value] : n.attrs()) {
      if (!first) os << ", ";
      first = false;
      os << name << "=" << attributeToString(value);
    }
    os << "]";
  }
  os << "(";
  printValueList(os, n.inputs(), /*with_types=*/false);
  os << ")";
}

void printGraph(std::ostream& os, const Graph& g, const std::string& indent) {
  os << "graph(";
  printValueList(os, g.inputs(), /*with_types=*/true);
  os << "):\n";
  for (Node* n = g.firstNode(); n != g.returnNode(); n = n->next()) {
    os << indent << "  ";
    printNodeHead(os, *n);
    if (n->subgraph() != nullptr) {
      os << " {\n" << indent << "    ";
      printGraph(os, *n->subgraph(), indent + "    ");
      os << indent << "  }";
    }
    os << "\n";
  }
  os << indent << "  return (";
  printValueList(os, g.outputs(), /*with_types=*/false);
  os << ")\n";
}

}  // namespace

std::string attributeToString(const AttributeValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return formatDouble(*d);
  // A traced constant: its type and shape (the text form cannot be parsed back).
  if (const auto* t = std::get_if<Tensor>(&v)) return "<" + t->describe() + ">";
  const auto& ints = std::get<std::vector<int64_t>>(v);
  std::string s = "[";
  for (size_t k = 0; k < ints.size(); ++k) {
    if (k > 0) s += ", ";
    s += std::to_string(ints[k]);
  }
  return s + "]";
}

std::string toString(const Graph& g) {
  std::ostringstream os;
  printGraph(os, g, "");
  return os.str();
}

std::string toString(const Node& n) {
  std::ostringstream os;
  printNodeHead(os, n);
  return os.str();
}

}  // namespace ag::jit
