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

// How a program's ops are spelled: with torch_runtime.py's helpers (add_scalar, the engine's
// dropout; the fuzzed script), or in plain PyTorch that runs without them
// (torch.ops.aten.add.Scalar; the standalone crash scripts).
enum class TorchSpelling { kRuntimeHelpers, kPlainTorch };

// A float literal: nan and inf bare for torch_runtime.py, float('nan') in plain PyTorch.
std::string torch_float(double x, TorchSpelling spelling);

// One op's PyTorch expression, e.g. "torch.mm(v1, v2)"; empty where the spelling has none (an op
// that is not generated, or dropout with p > 0 in plain PyTorch).
std::string torch_op_expr(const Instr& instr, TorchSpelling spelling);

// The code of a statement that both spellings write alike (view, detach, detach_, requires_grad_, a
// custom Function's apply, reading and setting .grad, removing a hook, retain_grad); empty for the
// others.
std::string torch_shared_code(const Stmt& stmt);

// A kHook statement's registration, "h3 = v2.grad_fn.register_prehook(FN)", with the hook
// function's expression `hook_fn` (torch_runtime.py's logging ones, or a standalone script's).
std::string torch_hook_code(const Stmt& stmt, const std::string& hook_fn);

}  // namespace ag::proptests
