#pragma once

#include <memory>
#include <string>

#include "engine/jit/ir.h"

namespace ag::jit {

// Parses the text form printed by toString(const Graph&) and verifies the
// result. Throws IrError ("line L: ...") on a syntax error, an undefined or
// redefined value, or anything the verifier rejects.
std::unique_ptr<Graph> parseGraph(const std::string& text);

}  // namespace ag::jit
