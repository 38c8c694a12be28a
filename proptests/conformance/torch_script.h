#pragma once

// Renders a conformance program as a PyTorch script for torch_runtime.py (which documents the
// script's form). Where the engine deliberately differs from PyTorch, the script spells the
// engine's semantics in PyTorch, each such place naming its entry in DEVIATIONS.md.

#include <string>

#include "proptests/conformance/program.h"

namespace ag::proptests {

std::string torch_script(const ConformanceProgram& program, const std::string& title);

// One statement's PyTorch code, e.g. "v3 = torch.mm(v1, v2)".
std::string torch_code(const Stmt& stmt);

}  // namespace ag::proptests
