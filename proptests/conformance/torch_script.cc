#include "proptests/conformance/torch_script.h"

#include <sstream>

#include "proptests/conformance/deviations.h"
#include "proptests/conformance/text.h"

namespace ag::proptests {
namespace {

std::string name(int v) { return v < 0 ? "None" : "v" + std::to_string(v); }

std::string py_list(const std::vector<int64_t>& xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  return s + "]";
}

std::string py_names(const std::vector<int>& vs) {
  std::string s = "[";
  for (size_t i = 0; i < vs.size(); ++i) s += (i ? ", " : "") + name(vs[i]);
  return s + "]";
}

std::string py_bool(bool b) { return b ? "True" : "False"; }

bool multi_output(const Stmt& s) {
  return s.kind == StmtKind::kGrad || s.kind == StmtKind::kTransform ||
         (s.kind == StmtKind::kViewOp &&
          (s.view_op == ViewOp::kSplit || s.view_op == ViewOp::kChunk ||
           s.view_op == ViewOp::kUnbind));
}

std::string results(const Stmt& s) {
  std::string out;
  for (size_t i = 0; i < s.results.size(); ++i) out += (i ? ", " : "") + name(s.results[i]);
  if (s.results.size() == 1 && multi_output(s)) out += ",";
  return out;
}

// x[:, :, i] for select, x[:, a:b:s] for slice (dims from the front); the method elsewhere.
std::string index_expr(const std::string& x, int64_t dim, const std::string& index) {
  std::string out = x + "[";
  for (int64_t d = 0; d < dim; ++d) out += ":, ";
  return out + index + "]";
}

// A view op's PyTorch expression, as a user writes it.
std::string view_op_expr(const Stmt& s) {
  const std::string x = name(s.args[0]);
  const auto& i = s.ints;
  auto ints = [&](size_t from) {
    std::string out;
    for (size_t k = from; k < i.size(); ++k) out += (k > from ? ", " : "") + std::to_string(i[k]);
    return out;
  };
  switch (s.view_op) {
    case ViewOp::kSelect:
      if (i.at(0) >= 0) return index_expr(x, i[0], std::to_string(i.at(1)));
      return x + ".select(" + ints(0) + ")";
    case ViewOp::kSlice: {
      // Python's indexing returns an alias (AliasBackward0, whose gradient is the incoming one
      // itself) for a slice that covers the whole dim; the engine's slice is aten::slice
      // (SliceBackward0, a new gradient) at every range. Such a slice may start at 0 or below.
      if (i.at(0) < 0 || (i.at(3) == 1 && i.at(1) <= 0)) {
        return "torch.ops.aten.slice(" + x + ", " + ints(0) + ")";
      }
      std::string range = std::to_string(i.at(1)) + ":" + std::to_string(i.at(2));
      if (i.at(3) != 1) range += ":" + std::to_string(i[3]);
      return index_expr(x, i[0], range);
    }
    case ViewOp::kNarrow:
      return x + ".narrow(" + ints(0) + ")";
    case ViewOp::kPermute:
      return x + ".permute(" + py_list(s.shape) + ")";
    case ViewOp::kT:
      return x + ".t()";
    case ViewOp::kExpand:
      return x + ".expand(" + py_list(s.shape) + ")";
    case ViewOp::kUnsqueeze:
      return x + ".unsqueeze(" + ints(0) + ")";
    case ViewOp::kSqueeze:
      return x + ".squeeze(" + ints(0) + ")";
    case ViewOp::kDiagonal:
      return x + ".diagonal(" + ints(0) + ")";
    case ViewOp::kUnfold:
      return x + ".unfold(" + ints(0) + ")";
    case ViewOp::kAsStrided:
      return x + ".as_strided(" + py_list(s.shape) + ", " + py_list(s.strides) + ", " + ints(0) +
             ")";
    case ViewOp::kAlias:
      return x + "[...]";  // Python's indexing returns aten::alias for x[...]
    case ViewOp::kSplit:
      return x + ".split(" + ints(0) + ")";
    case ViewOp::kChunk:
      return x + ".chunk(" + ints(0) + ")";
    case ViewOp::kUnbind:
      return x + ".unbind(" + ints(0) + ")";
    case ViewOp::kContiguous:
      return x + ".contiguous()";
  }
  return "";
}

std::string autograd_flags(const Stmt& s) {
  std::string out;
  if (s.retain_graph >= 0) out += ", retain_graph=" + py_bool(s.retain_graph == 1);
  out += ", create_graph=" + py_bool(s.create_graph);
  if (s.kind == StmtKind::kGrad) out += ", allow_unused=" + py_bool(s.allow_unused);
  return out;
}

std::string quoted(const std::vector<int>& vs) {
  std::string s = "[";
  for (size_t i = 0; i < vs.size(); ++i) s += (i ? ", \"" : "\"") + name(vs[i]) + "\"";
  return s + "]";
}

// A transform statement: its body as a Python function `body` (one line per instruction, joined
// by "\\n" escapes inside the statement's string), then torch_runtime.py's transform().
std::string transform_code(const Stmt& s) {
  std::string code = "def body(";
  for (int i = 0; i < s.num_primals; ++i) code += (i ? ", " : "") + name(i);
  code += "):\\n";
  int next = s.num_primals;
  for (const Instr& in : s.body) {
    code +=
        "    " + name(next++) + " = " + torch_op_expr(in, TorchSpelling::kRuntimeHelpers) + "\\n";
  }
  code += "    return " + name(next - 1) + "\\n";
  std::string args;
  for (size_t i = 0; i < s.args.size(); ++i) args += (i ? ", " : "") + name(s.args[i]);
  return code + results(s) + " = transform('" + transform_name(s.transform) + "', body, [" + args +
         "], " + std::to_string(s.num_primals) + ")";
}

}  // namespace

std::string torch_float(double x, TorchSpelling spelling) {
  std::string s = format_double(x);
  const bool special = s == "nan" || s == "inf" || s == "-inf";
  if (special) return spelling == TorchSpelling::kPlainTorch ? "float('" + s + "')" : s;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string torch_op_expr(const Instr& in, TorchSpelling spelling) {
  const bool helpers = spelling == TorchSpelling::kRuntimeHelpers;
  std::vector<std::string> a;
  for (int v : in.args) a.push_back(name(v));
  const std::string s = torch_float(in.scalar, spelling);
  const std::string functional = helpers ? "F." : "torch.nn.functional.";
  const std::string keepdim = helpers      ? ", keepdim=" + py_bool(in.keepdim)
                              : in.keepdim ? ", keepdim=True"
                                           : "";
  switch (in.op) {
    case Op::kLeaf:
      break;
    case Op::kAdd:
      return a[0] + " + " + a[1];
    case Op::kSub:
      return a[0] + " - " + a[1];
    case Op::kMul:
      return a[0] + " * " + a[1];
    case Op::kDiv:
      return a[0] + " / " + a[1];
    case Op::kPow:
      return "torch.pow(" + a[0] + ", " + a[1] + ")";
    case Op::kAddScalar:
      return (helpers ? "add_scalar(" : "torch.ops.aten.add.Scalar(") + a[0] + ", " + s + ")";
    case Op::kMulScalar:
      return (helpers ? "mul_scalar(" : "torch.ops.aten.mul.Scalar(") + a[0] + ", " + s + ")";
    case Op::kPowScalar:
      return "torch.pow(" + a[0] + ", " + s + ")";
    case Op::kSum:
      return "torch.sum(" + a[0] + ")";
    case Op::kMean:
      return "torch.mean(" + a[0] + ")";
    case Op::kSumDim:
    case Op::kMeanDim:
      return std::string(in.op == Op::kSumDim ? "torch.sum(" : "torch.mean(") + a[0] + ", " +
             std::to_string(in.dim0) + keepdim + ")";
    case Op::kSumTo:
      return a[0] + ".sum_to_size(" + py_list(in.shape) + ")";
    case Op::kBroadcastTo:
      return "torch.broadcast_to(" + a[0] + ", " + py_list(in.shape) + ")";
    case Op::kReshape:
      return "torch.reshape(" + a[0] + ", " + py_list(in.shape) + ")";
    case Op::kTranspose:
      return "torch.transpose(" + a[0] + ", " + std::to_string(in.dim0) + ", " +
             std::to_string(in.dim1) + ")";
    case Op::kMm:
      return "torch.mm(" + a[0] + ", " + a[1] + ")";
    case Op::kAddmm:
      return "torch.addmm(" + a[0] + ", " + a[1] + ", " + a[2] + ")";
    case Op::kLinear:
      return functional + "linear(" + a[0] + ", " + a[1] + (a.size() > 2 ? ", " + a[2] : "") + ")";
    case Op::kBmm:
      return "torch.bmm(" + a[0] + ", " + a[1] + ")";
    case Op::kMatmul:
      return "torch.matmul(" + a[0] + ", " + a[1] + ")";
    case Op::kLogSoftmax:
      return "torch.log_softmax(" + a[0] + ", " + std::to_string(in.dim0) + ")";
    case Op::kNllLoss:
    case Op::kCrossEntropy:
      return functional + (in.op == Op::kNllLoss ? "nll_loss(" : "cross_entropy(") + a[0] + ", " +
             (helpers ? "targets(" : "torch.tensor(") + py_list(in.targets) + "))";
    case Op::kDropout:
    case Op::kDropout2d:
      if (!helpers) {
        // With p > 0 the mask is the engine's, which plain PyTorch cannot spell.
        if (in.scalar != 0) return "";
        return in.op == Op::kDropout ? functional + "dropout(" + a[0] + ", 0.0)" : a[0];
      }
      // Deviation [engine-random-numbers]
      return note_deviation("engine-random-numbers",
                            std::string(in.op == Op::kDropout ? "dropout(" : "dropout2d(") + a[0] +
                                ", " + s + ", " + std::to_string(in.seed) + ")");
    case Op::kClone:
      return "torch.clone(" + a[0] + ")";
    case Op::kMaximum:
      return "torch.maximum(" + a[0] + ", " + a[1] + ")";
    case Op::kMinimum:
      return "torch.minimum(" + a[0] + ", " + a[1] + ")";
    // Note [Masks are 0 and 1] (ops/select.cc): the engine's masks are 0 and 1 in the operands'
    // dtype, where PyTorch's are bool.
    case Op::kGt:
      return "torch.gt(" + a[0] + ", " + a[1] + ").to(" + a[0] + ".dtype)";
    case Op::kWhere:
      return "torch.where(" + a[0] + " != 0, " + a[1] + ", " + a[2] + ")";
    case Op::kMaskedFill:
      return "torch.masked_fill(" + a[0] + ", " + a[1] + " != 0, " + s + ")";
    case Op::kClamp:
      return "torch.clamp(" + a[0] + ", " + s + ", " + torch_float(in.max, spelling) + ")";
    case Op::kClampMin:
      return "torch.clamp_min(" + a[0] + ", " + s + ")";
    case Op::kClampMax:
      return "torch.clamp_max(" + a[0] + ", " + s + ")";
    case Op::kSoftmax:
      return "torch.softmax(" + a[0] + ", " + std::to_string(in.dim0) + ")";
    case Op::kCumsum:
      return "torch.cumsum(" + a[0] + ", " + std::to_string(in.dim0) + ")";
    case Op::kCat:
    case Op::kStack: {
      std::string list;
      for (const std::string& x : a) list += (list.empty() ? "" : ", ") + x;
      return std::string(in.op == Op::kCat ? "torch.cat([" : "torch.stack([") + list + "], " +
             std::to_string(in.dim0) + ")";
    }
    case Op::kMaxDim:
    case Op::kMinDim:
      return std::string(in.op == Op::kMaxDim ? "torch.max(" : "torch.min(") + a[0] + ", " +
             std::to_string(in.dim0) + (in.keepdim ? ", keepdim=True" : "") + ").values";
    case Op::kIndexSelect:
    case Op::kGather:
    case Op::kScatterAdd: {
      // The engine's index is a list of int64 values with a shape (ops/ops.h, Index).
      const std::string index = std::string(helpers ? "targets(" : "torch.tensor(") +
                                py_list(in.targets) + ").reshape(" + py_list(in.shape) + ")";
      const std::string dim = std::to_string(in.dim0);
      if (in.op == Op::kIndexSelect)
        return "torch.index_select(" + a[0] + ", " + dim + ", " + index + ")";
      if (in.op == Op::kGather) return "torch.gather(" + a[0] + ", " + dim + ", " + index + ")";
      return "torch.scatter_add(" + a[0] + ", " + dim + ", " + index + ", " + a[1] + ")";
    }
    default: {
      // An elementwise unary op: its row's PyTorch spelling (Note [Op traits]).
      const OpTraits& t = proptests::traits(proptests::op_id(in.op));
      if (t.unary_elementwise()) {
        std::string torch = t.torch;
        if (!helpers && torch.rfind("F.", 0) == 0) torch = functional + torch.substr(2);
        return torch + "(" + a[0] + ")";
      }
      break;  // not generated (the traits table's kComposition column)
    }
  }
  return "";
}

std::string torch_shared_code(const Stmt& s) {
  const auto& a = s.args;
  switch (s.kind) {
    case StmtKind::kView:
      return results(s) + " = " + name(a[0]) + ".view(" + py_list(s.shape) + ")";
    case StmtKind::kViewOp:
      return std::string(s.flag ? "with torch.no_grad(): " : "") + results(s) + " = " +
             view_op_expr(s);
    case StmtKind::kDetach:
      return results(s) + " = " + name(a[0]) + ".detach()";
    case StmtKind::kDetachInplace:
      return name(a[0]) + ".detach_()";
    case StmtKind::kSetRequiresGrad:
      return name(a[0]) + ".requires_grad_(" + py_bool(s.flag) + ")";
    case StmtKind::kCustom: {
      std::string call = std::string(custom_name(s.custom)) + ".apply(";
      for (size_t i = 0; i < a.size(); ++i) call += (i ? ", " : "") + name(a[i]);
      return results(s) + " = " + call + ")";
    }
    case StmtKind::kReadGrad:
      return results(s) + " = " + name(a[0]) + ".grad";
    case StmtKind::kSetGrad:
      return name(a[0]) + ".grad = " + (a.size() > 1 ? name(a[1]) : "None");
    case StmtKind::kRemoveHook:
      return "h" + std::to_string(s.hook) + ".remove()";
    case StmtKind::kRetainGrad:
      return name(a[0]) + ".retain_grad()";
    case StmtKind::kDualLevel:
      return s.flag ? "fwAD.enter_dual_level()" : "fwAD.exit_dual_level()";
    case StmtKind::kMakeDual:
      return results(s) + " = fwAD.make_dual(" + name(a[0]) + ", " + name(a[1]) + ")";
    case StmtKind::kUnpackDual:
      return results(s) + " = fwAD.unpack_dual(" + name(a[0]) + ")";
    case StmtKind::kTransform:
      return transform_code(s);
    default:
      break;
  }
  return "";
}

std::string torch_hook_code(const Stmt& s, const std::string& hook_fn) {
  const std::string handle = "h" + std::to_string(s.hook) + " = ";
  const std::string t = name(s.args.at(0));
  switch (s.hook_kind) {
    case HookKind::kTensor:
      return handle + t + ".register_hook(" + hook_fn + ")";
    case HookKind::kPre:
      return handle + t + ".grad_fn.register_prehook(" + hook_fn + ")";
    case HookKind::kPost:
      return handle + t + ".grad_fn.register_hook(" + hook_fn + ")";
    case HookKind::kPostAccumulate:
      return handle + t + ".register_post_accumulate_grad_hook(" + hook_fn + ")";
  }
  return "";
}

std::string torch_code(const Stmt& s) {
  const auto& a = s.args;
  switch (s.kind) {
    case StmtKind::kLeaf:
      // Deviation [engine-random-numbers]
      return results(s) + " = " +
             note_deviation("engine-random-numbers",
                            "leaf(" + py_list(s.shape) + ", seed=" + std::to_string(s.seed) +
                                ", requires_grad=" + py_bool(s.flag) + ")");
    case StmtKind::kOp: {
      const std::string expr = torch_op_expr(s.instr, TorchSpelling::kRuntimeHelpers);
      return results(s) + " = " + (expr.empty() ? "None" : expr);
    }
    case StmtKind::kInplace:
      // Deviation [too-hard-overlaps-read-first]
      return std::string(s.flag ? "with torch.no_grad(): " : "") + name(a[0]) + "." +
             inplace_name(s.inplace) + "(" +
             note_deviation("too-hard-overlaps-read-first",
                            "whole(" + name(a[1]) + ", " + name(a[0]) +
                                (s.inplace == InplaceKind::kCopy ? ", copy=True" : "") + ")") +
             ")";
    case StmtKind::kGrad:
      // Deviation [unused-input-checked-first] (torch_runtime.grad)
      if (!s.allow_unused) note_deviation("unused-input-checked-first", "");
      return results(s) + " = grad(" + py_names(s.outputs) + ", " + py_names(s.inputs) + ", " +
             py_names(s.grad_outputs) + autograd_flags(s) + ")";
    case StmtKind::kHook: {
      // torch_runtime.py's hooks, which log their firings.
      const std::string id = std::to_string(s.hook);
      const char* const fns[] = {"tensor_hook(", "pre_hook(", "post_hook(",
                                 "post_accumulate_hook("};
      return torch_hook_code(s,
                             fns[static_cast<int>(s.hook_kind)] + id +
                                 (s.hook_kind == HookKind::kTensor
                                      ? ", " + torch_float(s.scale, TorchSpelling::kRuntimeHelpers)
                                      : "") +
                                 ")");
    }
    case StmtKind::kBackward:
      // Deviation [backward-grad-tensors-copied] (torch_runtime.backward)
      note_deviation("backward-grad-tensors-copied", "");
      return "backward(" + py_names(s.outputs) + ", " + py_names(s.grad_outputs) +
             ", inputs=" + (s.inputs.empty() ? "None" : py_names(s.inputs)) + autograd_flags(s) +
             ")";
    default:
      break;
  }
  const std::string shared = torch_shared_code(s);
  return shared.empty() ? "pass" : shared;
}

std::string torch_script(const ConformanceProgram& p, const std::string& title) {
  std::ostringstream os;
  os << "# " << title << "\n"
     << "# A conformance program rendered for PyTorch (proptests/conformance/torch_script.cc).\n"
     << "# Run it with: python3 torch_runtime.py THIS_FILE   (prints its records)\n"
     << "from torch_runtime import *\n\nrun([\n";
  for (const Stmt& s : p.stmts) {
    os << "    S(\"" << torch_code(s) << "\"";
    if (!reads(s).empty()) os << ", reads=" << quoted(reads(s));
    if (!s.results.empty()) os << ", results=" << quoted(s.results);
    if (!records_values(s)) os << ", values=False";
    if (records_target(s)) os << ", target=\"" << name(s.args[0]) << "\"";
    if (!s.record_flags.empty()) os << ", flags=" << quoted(s.record_flags);
    if (!s.record_grads.empty()) os << ", grads=" << quoted(s.record_grads);
    os << "),\n";
  }
  os << "])\n";
  return os.str();
}

}  // namespace ag::proptests
