#include "proptests/foreign/standalone_script.h"

#include <sstream>

#include "ops/counter_rng.h"
#include "proptests/conformance/text.h"
#include "proptests/conformance/torch_script.h"
#include "proptests/op_traits.h"

namespace ag::proptests {
namespace {

std::string name(int v) { return v < 0 ? "None" : "v" + std::to_string(v); }

std::string py_float(double x) { return torch_float(x, TorchSpelling::kPlainTorch); }

std::string py_ints(const std::vector<int64_t>& xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  return s + "]";
}

// One name for a list of one, else a list ("[]" when empty).
std::string py_values(const std::vector<int>& vs) {
  if (vs.size() == 1) return name(vs[0]);
  std::string s = "[";
  for (size_t i = 0; i < vs.size(); ++i) s += (i ? ", " : "") + name(vs[i]);
  return s + "]";
}

std::string py_bool(bool b) { return b ? "True" : "False"; }

// The nested list of a leaf's values, row-major.
std::string nested(const std::vector<double>& values, const Shape& shape, size_t dim,
                   size_t& next) {
  if (dim == shape.size()) return py_float(values[next++]);
  std::string s = "[";
  for (int64_t i = 0; i < shape[dim]; ++i)
    s += (i ? ", " : "") + nested(values, shape, dim + 1, next);
  return s + "]";
}

std::string leaf_expr(const Stmt& s, LeafValues leaves) {
  int64_t numel = 1;
  for (int64_t d : s.shape) numel *= d;
  const std::string tail =
      std::string(", dtype=torch.float64") + (s.flag ? ", requires_grad=True" : "") + ")";
  if (leaves == LeafValues::kRandom) return "torch.rand(" + py_ints(s.shape) + tail;
  if (numel == 0) return "torch.zeros(" + py_ints(s.shape) + tail;
  // ops::uniform(shape, -1, 1, seed), as torch_runtime.leaf draws it.
  std::vector<double> values;
  for (int64_t i = 0; i < numel; ++i) {
    values.push_back(-1.0 + 2.0 * ops::uniform_from_counter(s.seed, static_cast<uint64_t>(i)));
  }
  size_t next = 0;
  return "torch.tensor(" + nested(values, s.shape, 0, next) + tail;
}

std::string op_expr(const Instr& in) {
  if ((in.op == Op::kDropout || in.op == Op::kDropout2d) && in.scalar != 0) {
    throw StandaloneError(std::string(proptests::op_name(in.op)) +
                          " with p > 0: its mask is the engine's, with no plain PyTorch "
                          "spelling");
  }
  std::string expr = torch_op_expr(in, TorchSpelling::kPlainTorch);
  if (expr.empty()) {
    throw StandaloneError(std::string("op ") + proptests::op_name(in.op) +
                          ": no standalone spelling");
  }
  return expr;
}

const char* const kMulClass =
    "class Mul(torch.autograd.Function):\n"
    "    @staticmethod\n"
    "    def forward(ctx, a, b):\n"
    "        ctx.save_for_backward(a, b)\n"
    "        return a * b\n"
    "\n"
    "    @staticmethod\n"
    "    def backward(ctx, g):\n"
    "        a, b = ctx.saved_tensors\n"
    "        na, nb = ctx.needs_input_grad\n"
    "        return ((g * b).sum_to_size(a.shape) if na else None,\n"
    "                (g * a).sum_to_size(b.shape) if nb else None)\n";

const char* const kTwoClass =
    "class Two(torch.autograd.Function):\n"
    "    @staticmethod\n"
    "    def forward(ctx, a, b):\n"
    "        ctx.save_for_backward(a, b)\n"
    "        return a * b, a + b\n"
    "\n"
    "    @staticmethod\n"
    "    def backward(ctx, g0, g1):\n"
    "        a, b = ctx.saved_tensors\n"
    "        na, nb = ctx.needs_input_grad\n"
    "        return ((g0 * b + g1).sum_to_size(a.shape) if na else None,\n"
    "                (g0 * a + g1).sum_to_size(b.shape) if nb else None)\n";

const char* const kSplitClass =
    "class Split(torch.autograd.Function):\n"
    "    @staticmethod\n"
    "    def forward(ctx, a):\n"
    "        out = (a * 2.0, -a)\n"
    "        ctx.mark_non_differentiable(out[1])\n"
    "        return out\n"
    "\n"
    "    @staticmethod\n"
    "    def backward(ctx, g0, g1):\n"
    "        return g0 * 2.0 if ctx.needs_input_grad[0] else None\n";

const char* const kCompactMulClass =
    "class Mul(torch.autograd.Function):\n"
    "    forward = staticmethod(lambda ctx, a, b: (ctx.save_for_backward(a, b), a * b)[1])\n"
    "    backward = staticmethod(lambda ctx, g: (lambda a, b: ((g * b).sum_to_size(a.shape), "
    "(g * a).sum_to_size(b.shape)))(*ctx.saved_tensors))\n";

const char* const kCompactTwoClass =
    "class Two(torch.autograd.Function):\n"
    "    forward = staticmethod(lambda ctx, a, b: (ctx.save_for_backward(a, b), (a * b, a + "
    "b))[1])\n"
    "    backward = staticmethod(lambda ctx, g0, g1: (lambda a, b: ((g0 * b + "
    "g1).sum_to_size(a.shape), (g0 * a + g1).sum_to_size(b.shape)))(*ctx.saved_tensors))\n";

const char* const kCompactSplitClass =
    "class Split(torch.autograd.Function):\n"
    "    forward = staticmethod(lambda ctx, a: (lambda o: (ctx.mark_non_differentiable(o[1]), "
    "o)[1])((a * 2.0, -a)))\n"
    "    backward = staticmethod(lambda ctx, g0, g1: g0 * 2.0)\n";

const char* function_class(CustomKind kind, FunctionStyle style) {
  const bool full = style == FunctionStyle::kFull;
  switch (kind) {
    case CustomKind::kMul:
      return full ? kMulClass : kCompactMulClass;
    case CustomKind::kTwo:
      return full ? kTwoClass : kCompactTwoClass;
    case CustomKind::kSplit:
      return full ? kSplitClass : kCompactSplitClass;
  }
  return "";
}

std::string results(const Stmt& s) {
  std::string out;
  for (size_t i = 0; i < s.results.size(); ++i) out += (i ? ", " : "") + name(s.results[i]);
  if (s.results.size() == 1 && s.kind == StmtKind::kGrad) out += ",";
  return out;
}

std::string autograd_flags(const Stmt& s) {
  std::string out;
  if (s.retain_graph >= 0) out += ", retain_graph=" + py_bool(s.retain_graph == 1);
  if (s.create_graph) out += ", create_graph=True";
  if (s.kind == StmtKind::kGrad && s.allow_unused) out += ", allow_unused=True";
  return out;
}

bool all_none(const std::vector<int>& vs) {
  for (int v : vs) {
    if (v >= 0) return false;
  }
  return true;
}

// One statement's code; compound when it starts with "with ".
std::string code(const Stmt& s, LeafValues leaves) {
  const auto& a = s.args;
  switch (s.kind) {
    case StmtKind::kLeaf:
      return results(s) + " = " + leaf_expr(s, leaves);
    case StmtKind::kOp:
      return results(s) + " = " + op_expr(s.instr);
    case StmtKind::kInplace:
      return std::string(s.flag ? "with torch.no_grad(): " : "") + name(a[0]) + "." +
             inplace_name(s.inplace) + "(" + name(a[1]) + ")";
    case StmtKind::kGrad:
      return results(s) + " = torch.autograd.grad(" + py_values(s.outputs) + ", " +
             py_values(s.inputs) +
             (all_none(s.grad_outputs) ? "" : ", " + py_values(s.grad_outputs)) +
             autograd_flags(s) + ")";
    case StmtKind::kBackward: {
      const std::string inputs = s.inputs.empty() ? "" : ", inputs=" + py_values(s.inputs);
      if (s.outputs.size() == 1) {
        std::string args = all_none(s.grad_outputs) ? "" : name(s.grad_outputs[0]);
        std::string rest = inputs + autograd_flags(s);
        if (args.empty() && !rest.empty()) rest = rest.substr(2);
        return name(s.outputs[0]) + ".backward(" + args + rest + ")";
      }
      return "torch.autograd.backward(" + py_values(s.outputs) +
             (all_none(s.grad_outputs) ? "" : ", " + py_values(s.grad_outputs)) + inputs +
             autograd_flags(s) + ")";
    }
    case StmtKind::kHook: {
      // A hook that prints what it is handed (and scales a tensor's gradient).
      const std::string id = "'h" + std::to_string(s.hook) + "'";
      switch (s.hook_kind) {
        case HookKind::kTensor:
          return torch_hook_code(s, "lambda g: print(" + id + ", g) or (None if g is None or " +
                                        torch_float(s.scale, TorchSpelling::kPlainTorch) +
                                        " == 1 else g * " +
                                        torch_float(s.scale, TorchSpelling::kPlainTorch) + ")");
        case HookKind::kPre:
          return torch_hook_code(s, "lambda gs: print(" + id + ", gs)");
        case HookKind::kPost:
          return torch_hook_code(s, "lambda gi, go: print(" + id + ", gi, go)");
        case HookKind::kPostAccumulate:
          return torch_hook_code(s, "lambda t: print(" + id + ", t.grad)");
      }
      break;
    }
    default: {
      // View, detach, requires_grad_, a custom Function's apply, .grad: as the fuzzed script.
      std::string shared = torch_shared_code(s);
      if (!shared.empty()) return shared;
      break;
    }
  }
  throw StandaloneError("statement kind " + std::to_string(static_cast<int>(s.kind)) +
                        ": no standalone spelling");
}

}  // namespace

std::string render_standalone(const ConformanceProgram& program, const StandaloneOptions& options) {
  std::ostringstream classes, body;
  std::set<CustomKind> defined;
  std::set<int> missing;  // values a raising statement did not make (the runtime skips readers)
  for (size_t i = 0; i < program.stmts.size(); ++i) {
    const Stmt& s = program.stmts[i];
    bool skipped = false;
    for (int v : reads(s)) skipped = skipped || missing.count(v) > 0;
    if (skipped) {
      missing.insert(s.results.begin(), s.results.end());
      continue;
    }
    std::string line;
    try {
      line = code(s, options.leaves);
    } catch (const StandaloneError& e) {
      throw StandaloneError("statement " + std::to_string(i) + " '" + to_text(s) +
                            "': " + e.what());
    }
    if (s.kind == StmtKind::kCustom && defined.insert(s.custom).second) {
      classes << function_class(s.custom, options.functions)
              << (options.functions == FunctionStyle::kFull ? "\n\n" : "");
    }
    if (options.raising.count(i)) {
      missing.insert(s.results.begin(), s.results.end());
      if (line.rfind("with ", 0) == 0) {
        body << "try:\n    " << line << "\nexcept Exception:\n    pass\n";
      } else {
        body << "try: " << line << "\nexcept Exception: pass\n";
      }
    } else {
      body << line << "\n";
    }
  }
  if (!options.print.empty()) {
    body << "print(";
    for (size_t i = 0; i < options.print.size(); ++i) {
      body << (i ? ", " : "") << name(options.print[i]);
    }
    body << ")\n";
  }
  const std::string defs = classes.str();
  if (options.functions == FunctionStyle::kCompact) return "import torch\n" + defs + body.str();
  return "import torch\n" + (defs.empty() ? "" : "\n\n" + defs) + body.str();
}

int script_lines(const std::string& script) {
  int n = 0;
  std::istringstream in(script);
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos || line[first] == '#' || line == "import torch") continue;
    ++n;
  }
  return n;
}

}  // namespace ag::proptests
