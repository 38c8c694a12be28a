#pragma once

// For the alias analysis tests: a parsed graph whose values and nodes are found by name.

#include <memory>
#include <string>
#include <unordered_map>

#include "engine/jit/ir.h"
#include "engine/jit/ir_parser.h"

namespace ag::jit {

// Finds values and nodes of a parsed graph by name.
struct Named {
  explicit Named(const std::string& text) : graph(parseGraph(text)) {
    for (Value* in : graph->inputs()) values[in->name()] = in;
    for (Node* n : graph->nodes()) {
      for (Value* out : n->outputs()) values[out->name()] = out;
    }
  }
  Value* v(const std::string& name) const { return values.at(name); }
  Node* node(const std::string& output_name) const { return values.at(output_name)->node(); }

  std::unique_ptr<Graph> graph;
  std::unordered_map<std::string, Value*> values;
};

}  // namespace ag::jit
