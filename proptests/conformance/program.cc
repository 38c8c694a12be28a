#include "proptests/conformance/program.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "proptests/conformance/text.h"

namespace ag::proptests {
namespace {

std::string ids(const std::vector<int>& values, const char* none = "-") {
  if (values.empty()) return none;
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) s += ",";
    s += values[i] < 0 ? "-" : "v" + std::to_string(values[i]);
  }
  return s;
}

std::string instr_params(const Instr& in) {
  std::ostringstream os;
  switch (in.op) {
    case Op::kAddScalar:
    case Op::kMulScalar:
    case Op::kPowScalar:
    case Op::kClampMin:
    case Op::kClampMax:
    case Op::kMaskedFill:
      os << " s=" << format_double(in.scalar);
      break;
    case Op::kClamp:
      os << " s=" << format_double(in.scalar) << " max=" << format_double(in.max);
      break;
    case Op::kSumDim:
    case Op::kMeanDim:
      os << " dim=" << in.dim0 << " keepdim=" << in.keepdim;
      break;
    case Op::kLogSoftmax:
    case Op::kSoftmax:
    case Op::kCumsum:
      os << " dim=" << in.dim0;
      break;
    case Op::kMaxDim:
    case Op::kMinDim:
      os << " dim=" << in.dim0 << " keepdim=" << in.keepdim;
      break;
    case Op::kCat:
    case Op::kStack:
      os << " dim=" << in.dim0;
      break;
    case Op::kIndexSelect:
    case Op::kGather:
    case Op::kScatterAdd:  // the index: its shape and values
      os << " dim=" << in.dim0 << " shape=" << format_shape(in.shape)
         << " targets=" << format_shape(in.targets);
      break;
    case Op::kTranspose:
      os << " dim0=" << in.dim0 << " dim1=" << in.dim1;
      break;
    case Op::kSumTo:
    case Op::kBroadcastTo:
    case Op::kReshape:
      os << " shape=" << format_shape(in.shape);
      break;
    case Op::kNllLoss:
    case Op::kCrossEntropy:
      os << " targets=" << format_shape(in.targets);
      break;
    case Op::kDropout:
    case Op::kDropout2d:
      os << " p=" << format_double(in.scalar) << " seed=" << in.seed;
      break;
    default:
      break;
  }
  return os.str();
}

// key=value fields of a statement line, after the positional tokens.
struct Fields {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> named;
  const std::string* find(const std::string& key) const {
    for (const auto& [k, v] : named) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  const std::string& get(const std::string& key) const {
    const std::string* v = find(key);
    if (!v) throw std::runtime_error("missing field " + key);
    return *v;
  }
};

int value_id(const std::string& token) {
  if (token == "-") return -1;
  if (token.size() < 2 || token[0] != 'v') throw std::runtime_error("bad value '" + token + "'");
  return std::stoi(token.substr(1));
}

std::vector<int> value_ids(const std::string& list) {
  std::vector<int> out;
  if (list == "-") return out;
  for (const std::string& t : split(list, ',')) out.push_back(value_id(t));
  return out;
}

std::vector<int> value_ids_with_none(const std::string& list) {
  std::vector<int> out;
  for (const std::string& t : split(list, ',')) out.push_back(value_id(t));
  return out;
}

// An op of the list that the compositions generate (the traits table, proptests/op_traits.h).
Op parse_op(const std::string& id) {
  ops::OpId op = ops::OpId::kAdd;
  if (!ops::op_named(id.c_str(), &op) || !proptests::made_by(op, proptests::kComposition)) {
    throw std::runtime_error("unknown op '" + id + "'");
  }
  return proptests::op_of(op);
}

template <typename Enum, size_t N>
Enum parse_enum(const std::string& id, const char* const (&names)[N], const char* what) {
  for (size_t i = 0; i < N; ++i) {
    if (id == names[i]) return static_cast<Enum>(i);
  }
  throw std::runtime_error(std::string("unknown ") + what + " '" + id + "'");
}

const char* const kInplaceNames[] = {"add_", "mul_", "copy_"};

struct ViewOpRow {
  ops::OpId id;
  std::vector<const char*> ints;
};
const ViewOpRow& view_row(ViewOp op) {
  using ops::OpId;
  static const ViewOpRow kRows[kNumViewOps] = {
      {OpId::kSelect, {"dim", "index"}},
      {OpId::kSlice, {"dim", "start", "end", "step"}},
      {OpId::kNarrow, {"dim", "start", "length"}},
      {OpId::kPermute, {}},
      {OpId::kT, {}},
      {OpId::kExpand, {}},
      {OpId::kUnsqueeze, {"dim"}},
      {OpId::kSqueeze, {"dim"}},
      {OpId::kDiagonal, {"offset", "dim1", "dim2"}},
      {OpId::kUnfold, {"dim", "size", "step"}},
      {OpId::kAsStrided, {"offset"}},
      {OpId::kAlias, {}},
      {OpId::kSplit, {"size", "dim"}},
      {OpId::kChunk, {"chunks", "dim"}},
      {OpId::kUnbind, {"dim"}},
      {OpId::kContiguous, {}},
  };
  return kRows[static_cast<int>(op)];
}

bool parse_view_op(const std::string& head, ViewOp* op) {
  for (int k = 0; k < kNumViewOps; ++k) {
    if (head == view_op_name(static_cast<ViewOp>(k))) {
      *op = static_cast<ViewOp>(k);
      return true;
    }
  }
  return false;
}
const char* const kCustomNames[] = {"Mul", "Two", "Split"};
const char* const kTransformNames[] = {"jvp", "vjp",       "jacrev",       "jacfwd",  "hessian",
                                       "hvp", "eager_vjp", "compiled_vjp", "dual_jvp"};

// A transform's body in the text form: each instruction as a kOp statement without results,
// ',' for ' ', ';' between instructions (Note [Conformance forward mode]).
std::string body_text(const std::vector<Instr>& body) {
  std::string out;
  for (const Instr& in : body) {
    std::string one = proptests::op_name(in.op);
    for (int a : in.args) one += " v" + std::to_string(a);
    one += instr_params(in);
    std::replace(one.begin(), one.end(), ' ', ',');
    out += (out.empty() ? "" : ";") + one;
  }
  return out;
}

Stmt parse_stmt(const std::string& line);

std::vector<Instr> parse_body(const std::string& text) {
  std::vector<Instr> body;
  for (std::string one : split(text, ';')) {
    std::replace(one.begin(), one.end(), ',', ' ');
    const Stmt s = parse_stmt(one);
    if (s.kind != StmtKind::kOp) throw std::runtime_error("a body holds ops only: '" + one + "'");
    body.push_back(s.instr);
  }
  return body;
}
const char* const kHookNames[] = {"hook", "prehook", "posthook", "post_accumulate_hook"};

Stmt parse_stmt(const std::string& line) {
  Stmt s;
  std::string body = line, extras;
  if (const size_t semi = line.find(" ; "); semi != std::string::npos) {
    body = line.substr(0, semi);
    extras = line.substr(semi + 3);
  }
  std::vector<std::string> tokens = split(body, ' ');
  size_t pos = 0;
  if (const auto eq = std::find(tokens.begin(), tokens.end(), "="); eq != tokens.end()) {
    for (auto it = tokens.begin(); it != eq; ++it) s.results.push_back(value_id(*it));
    pos = static_cast<size_t>(eq - tokens.begin()) + 1;
  }
  if (pos >= tokens.size()) throw std::runtime_error("no statement");
  const std::string head = tokens[pos++];
  Fields f;
  for (; pos < tokens.size(); ++pos) {
    const size_t eq = tokens[pos].find('=');
    if (eq == std::string::npos) {
      f.positional.push_back(tokens[pos]);
    } else {
      f.named.emplace_back(tokens[pos].substr(0, eq), tokens[pos].substr(eq + 1));
    }
  }
  auto positional_values = [&](size_t from) {
    std::vector<int> out;
    for (size_t i = from; i < f.positional.size(); ++i) out.push_back(value_id(f.positional[i]));
    return out;
  };
  if (head == "leaf") {
    s.kind = StmtKind::kLeaf;
    s.shape = parse_shape(f.positional.at(0));
    s.seed = std::stoull(f.get("seed"));
    s.flag = f.get("requires_grad") == "1";
  } else if (head == "view") {
    s.kind = StmtKind::kView;
    s.args = {value_id(f.positional.at(0))};
    s.shape = parse_shape(f.positional.at(1));
  } else if (parse_view_op(head, &s.view_op)) {
    s.kind = StmtKind::kViewOp;
    s.args = {value_id(f.positional.at(0))};
    if (s.view_op == ViewOp::kPermute) s.shape = parse_shape(f.get("dims"));
    if (f.positional.size() > 1) s.shape = parse_shape(f.positional.at(1));
    if (const auto* v = f.find("stride")) s.strides = parse_shape(*v);
    for (const char* n : view_int_names(s.view_op)) {
      if (const auto* v = f.find(n)) s.ints.push_back(std::stoll(*v));
    }
    if (const auto* v = f.find("no_grad")) s.flag = *v == "1";
  } else if (head == "detach") {
    s.kind = StmtKind::kDetach;
    s.args = positional_values(0);
  } else if (head == "detach_") {
    s.kind = StmtKind::kDetachInplace;
    s.args = positional_values(0);
  } else if (head == "add_" || head == "mul_" || head == "copy_") {
    s.kind = StmtKind::kInplace;
    s.inplace = parse_enum<InplaceKind>(head, kInplaceNames, "in-place op");
    s.args = positional_values(0);
    s.flag = f.get("no_grad") == "1";
  } else if (head == "requires_grad_") {
    s.kind = StmtKind::kSetRequiresGrad;
    s.args = {value_id(f.positional.at(0))};
    s.flag = f.positional.at(1) == "1";
  } else if (head == "custom") {
    s.kind = StmtKind::kCustom;
    s.custom = parse_enum<CustomKind>(f.positional.at(0), kCustomNames, "custom Function");
    s.args = positional_values(1);
  } else if (head == "grad" || head == "backward") {
    s.kind = head == "grad" ? StmtKind::kGrad : StmtKind::kBackward;
    s.outputs = value_ids(f.get(head == "grad" ? "outputs" : "tensors"));
    s.inputs = value_ids(f.get("inputs"));
    s.grad_outputs = value_ids_with_none(f.get(head == "grad" ? "grad_outputs" : "grad_tensors"));
    const std::string& retain = f.get("retain_graph");
    s.retain_graph = retain == "-" ? -1 : std::stoi(retain);
    s.create_graph = f.get("create_graph") == "1";
    if (head == "grad") s.allow_unused = f.get("allow_unused") == "1";
  } else if (head == "grad_of") {
    s.kind = StmtKind::kReadGrad;
    s.args = positional_values(0);
  } else if (head == "set_grad") {
    s.kind = StmtKind::kSetGrad;
    s.args = positional_values(0);
  } else if (std::find(std::begin(kHookNames), std::end(kHookNames), head) !=
             std::end(kHookNames)) {
    s.kind = StmtKind::kHook;
    s.hook_kind = parse_enum<HookKind>(head, kHookNames, "hook");
    s.args = positional_values(0);
    s.hook = std::stoi(f.get("h"));
    if (const auto* v = f.find("scale")) s.scale = std::stod(*v);
  } else if (head == "remove_hook") {
    s.kind = StmtKind::kRemoveHook;
    s.hook = std::stoi(f.get("h"));
  } else if (head == "retain_grad") {
    s.kind = StmtKind::kRetainGrad;
    s.args = positional_values(0);
  } else if (head == "dual_level") {
    s.kind = StmtKind::kDualLevel;
    if (f.positional.at(0) != "enter" && f.positional.at(0) != "exit")
      throw std::runtime_error("dual_level enter or exit");
    s.flag = f.positional.at(0) == "enter";
  } else if (head == "make_dual") {
    s.kind = StmtKind::kMakeDual;
    s.args = positional_values(0);
  } else if (head == "unpack_dual") {
    s.kind = StmtKind::kUnpackDual;
    s.args = positional_values(0);
  } else if (head == "func") {
    s.kind = StmtKind::kTransform;
    s.transform = parse_enum<TransformKind>(f.positional.at(0), kTransformNames, "transform");
    s.num_primals = std::stoi(f.get("n"));
    s.args = positional_values(1);
    s.body = parse_body(f.get("body"));
  } else {
    s.kind = StmtKind::kOp;
    Instr& in = s.instr;
    in.op = parse_op(head);
    in.args = positional_values(0);
    if (const auto* v = f.find("s")) in.scalar = std::stod(*v);
    if (const auto* v = f.find("p")) in.scalar = std::stod(*v);
    if (const auto* v = f.find("max")) in.max = std::stod(*v);
    if (const auto* v = f.find("dim")) in.dim0 = std::stoll(*v);
    if (const auto* v = f.find("dim0")) in.dim0 = std::stoll(*v);
    if (const auto* v = f.find("dim1")) in.dim1 = std::stoll(*v);
    if (const auto* v = f.find("keepdim")) in.keepdim = *v == "1";
    if (const auto* v = f.find("shape")) in.shape = parse_shape(*v);
    if (const auto* v = f.find("targets")) in.targets = parse_shape(*v);
    if (const auto* v = f.find("seed")) in.seed = std::stoull(*v);
  }
  // Extras: "flags v1 v2 ; grads v0" in any order.
  for (const std::string& part : split(extras, ';')) {
    std::vector<std::string> t = split(trim(part), ' ');
    if (t.empty()) continue;
    std::vector<int>& list = t[0] == "flags" ? s.record_flags : s.record_grads;
    if (t[0] != "flags" && t[0] != "grads") throw std::runtime_error("bad extras '" + part + "'");
    for (size_t i = 1; i < t.size(); ++i) list.push_back(value_id(t[i]));
  }
  return s;
}

}  // namespace

const char* inplace_name(InplaceKind kind) { return kInplaceNames[static_cast<int>(kind)]; }
const char* view_op_name(ViewOp op) { return ops::op_name(view_row(op).id); }
std::vector<const char*> view_int_names(ViewOp op) { return view_row(op).ints; }
ops::OpId view_op_id(ViewOp op) { return view_row(op).id; }
const char* custom_name(CustomKind kind) { return kCustomNames[static_cast<int>(kind)]; }
const char* hook_kind_name(HookKind kind) { return kHookNames[static_cast<int>(kind)]; }
const char* transform_name(TransformKind kind) { return kTransformNames[static_cast<int>(kind)]; }
int num_results(TransformKind kind, int num_primals) {
  switch (kind) {
    case TransformKind::kJvp:
    case TransformKind::kDualJvp:
      return 2;
    case TransformKind::kVjp:
    case TransformKind::kEagerVjp:
    case TransformKind::kCompiledVjp:
      return 1 + num_primals;
    case TransformKind::kJacrev:
    case TransformKind::kJacfwd:
      return num_primals;
    case TransformKind::kHessian:
    case TransformKind::kHvp:
      return 1;
  }
  return 0;
}
int num_results(CustomKind kind) { return kind == CustomKind::kMul ? 1 : 2; }

bool makes_views(const Stmt& s) {
  return s.kind == StmtKind::kView ||
         (s.kind == StmtKind::kViewOp && s.view_op != ViewOp::kContiguous);
}

ViewUse view_use(const ConformanceProgram& p) {
  ViewUse use;
  std::vector<int> storage(static_cast<size_t>(p.num_values));  // a value's storage: its root
  for (int v = 0; v < p.num_values; ++v) storage[v] = v;
  std::vector<bool> viewed(static_cast<size_t>(p.num_values), false);  // a view op's memory
  for (const Stmt& s : p.stmts) {
    if (s.kind == StmtKind::kDetach || makes_views(s)) {
      for (int r : s.results) storage.at(r) = storage.at(s.args[0]);
    }
    if (s.kind == StmtKind::kViewOp && makes_views(s)) {
      use.views = true;
      viewed.at(storage[s.args[0]]) = true;
      switch (s.view_op) {
        case ViewOp::kSelect:
        case ViewOp::kSlice:
        case ViewOp::kNarrow:
        case ViewOp::kDiagonal:
        case ViewOp::kUnfold:
        case ViewOp::kAsStrided:
        case ViewOp::kSplit:
        case ViewOp::kChunk:
        case ViewOp::kUnbind:
          use.partial_views = true;
          break;
        default:
          break;
      }
    }
    if (s.kind == StmtKind::kInplace && viewed.at(storage.at(s.args[0])))
      use.writes_through_views = true;
  }
  return use;
}

bool records_values(const Stmt& stmt) { return stmt.kind != StmtKind::kLeaf; }

bool records_target(const Stmt& stmt) {
  return stmt.kind == StmtKind::kInplace || stmt.kind == StmtKind::kDetachInplace;
}

std::vector<int> reads(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::kLeaf:
      return {};
    case StmtKind::kOp:
      return s.instr.args;
    case StmtKind::kGrad:
    case StmtKind::kBackward: {
      std::vector<int> out = s.outputs;
      out.insert(out.end(), s.inputs.begin(), s.inputs.end());
      for (int g : s.grad_outputs) {
        if (g >= 0) out.push_back(g);
      }
      return out;
    }
    default:
      return s.args;
  }
}

std::string to_text(const Stmt& s) {
  std::ostringstream os;
  if (!s.results.empty()) {
    for (int r : s.results) os << "v" << r << " ";
    os << "= ";
  }
  auto args = [&] {
    for (int a : s.args) os << " v" << a;
  };
  switch (s.kind) {
    case StmtKind::kLeaf:
      os << "leaf " << format_shape(s.shape) << " seed=" << s.seed << " requires_grad=" << s.flag;
      break;
    case StmtKind::kOp:
      os << proptests::op_name(s.instr.op);
      for (int a : s.instr.args) os << " v" << a;
      os << instr_params(s.instr);
      break;
    case StmtKind::kView:
      os << "view v" << s.args[0] << " " << format_shape(s.shape);
      break;
    case StmtKind::kViewOp: {
      os << view_op_name(s.view_op) << " v" << s.args[0];
      if (s.view_op == ViewOp::kPermute) os << " dims=" << format_shape(s.shape);
      if (s.view_op == ViewOp::kExpand || s.view_op == ViewOp::kAsStrided)
        os << " " << format_shape(s.shape);
      if (s.view_op == ViewOp::kAsStrided) os << " stride=" << format_shape(s.strides);
      const std::vector<const char*> names = view_int_names(s.view_op);
      for (size_t i = 0; i < s.ints.size() && i < names.size(); ++i)
        os << " " << names[i] << "=" << s.ints[i];
      if (s.flag) os << " no_grad=1";
      break;
    }
    case StmtKind::kDetach:
      os << "detach";
      args();
      break;
    case StmtKind::kDetachInplace:
      os << "detach_";
      args();
      break;
    case StmtKind::kInplace:
      os << inplace_name(s.inplace);
      args();
      os << " no_grad=" << s.flag;
      break;
    case StmtKind::kSetRequiresGrad:
      os << "requires_grad_ v" << s.args[0] << " " << s.flag;
      break;
    case StmtKind::kCustom:
      os << "custom " << custom_name(s.custom);
      args();
      break;
    case StmtKind::kGrad:
    case StmtKind::kBackward: {
      const bool g = s.kind == StmtKind::kGrad;
      os << (g ? "grad outputs=" : "backward tensors=") << ids(s.outputs)
         << " inputs=" << ids(s.inputs) << (g ? " grad_outputs=" : " grad_tensors=")
         << ids(s.grad_outputs)
         << " retain_graph=" << (s.retain_graph < 0 ? "-" : std::to_string(s.retain_graph))
         << " create_graph=" << s.create_graph;
      if (g) os << " allow_unused=" << s.allow_unused;
      break;
    }
    case StmtKind::kReadGrad:
      os << "grad_of";
      args();
      break;
    case StmtKind::kSetGrad:
      os << "set_grad";
      args();
      break;
    case StmtKind::kHook:
      os << hook_kind_name(s.hook_kind);
      args();
      os << " h=" << s.hook;
      if (s.hook_kind == HookKind::kTensor) os << " scale=" << format_double(s.scale);
      break;
    case StmtKind::kRemoveHook:
      os << "remove_hook h=" << s.hook;
      break;
    case StmtKind::kRetainGrad:
      os << "retain_grad";
      args();
      break;
    case StmtKind::kDualLevel:
      os << "dual_level " << (s.flag ? "enter" : "exit");
      break;
    case StmtKind::kMakeDual:
      os << "make_dual";
      args();
      break;
    case StmtKind::kUnpackDual:
      os << "unpack_dual";
      args();
      break;
    case StmtKind::kTransform:
      os << "func " << transform_name(s.transform) << " n=" << s.num_primals;
      args();
      os << " body=" << body_text(s.body);
      break;
  }
  if (!s.record_flags.empty()) {
    os << " ; flags";
    for (int v : s.record_flags) os << " v" << v;
  }
  if (!s.record_grads.empty()) {
    os << " ; grads";
    for (int v : s.record_grads) os << " v" << v;
  }
  return os.str();
}

std::string to_text(const ConformanceProgram& p) {
  std::string out;
  for (const Stmt& s : p.stmts) out += to_text(s) + "\n";
  return out;
}

ConformanceProgram parse_program(const std::string& text) {
  ConformanceProgram p;
  int line_no = 0;
  for (const std::string& raw : split(text, '\n')) {
    ++line_no;
    const std::string line = trim(raw);
    if (line.empty()) continue;
    try {
      p.stmts.push_back(parse_stmt(line));
    } catch (const std::exception& e) {
      throw std::runtime_error("program line " + std::to_string(line_no) + " '" + line +
                               "': " + e.what());
    }
    for (int r : p.stmts.back().results) p.num_values = std::max(p.num_values, r + 1);
  }
  return p;
}

}  // namespace ag::proptests
