#include "proptests/conformance/mode_check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/grad_mode.h"
#include "ops/ops.h"
#include "proptests/conformance/engine_runner.h"
#include "proptests/conformance/text.h"
#include "proptests/ops/composition.h"

namespace ag::proptests {
namespace {

bool random_op(const Instr& in) {
  return (in.op == Op::kDropout || in.op == Op::kDropout2d) && in.scalar != 0;
}

// The statements (indices) of the cone of `value` through leaves and pure ops; nothing when some
// value of it comes from another kind of statement.
std::optional<std::set<size_t>> pure_cone(const ConformanceProgram& p,
                                          const std::map<int, size_t>& maker, int value) {
  std::set<size_t> cone;
  std::vector<int> todo = {value};
  while (!todo.empty()) {
    const int v = todo.back();
    todo.pop_back();
    const auto it = maker.find(v);
    if (it == maker.end()) return std::nullopt;
    const Stmt& s = p.stmts[it->second];
    const bool pure = s.kind == StmtKind::kLeaf || (s.kind == StmtKind::kOp && !random_op(s.instr));
    if (!pure) return std::nullopt;
    if (!cone.insert(it->second).second) continue;
    if (s.kind == StmtKind::kOp) todo.insert(todo.end(), s.instr.args.begin(), s.instr.args.end());
  }
  return cone;
}

// The body's result at `primals`, grad mode off.
Tensor evaluate(const std::vector<Instr>& body, TensorList values) {
  NoGradGuard no_grad;
  for (const Instr& in : body) {
    TensorList args;
    for (int a : in.args) args.push_back(values.at(static_cast<size_t>(a)));
    values.push_back(run_instr(in, args));
  }
  return values.back();
}

// Statement index -> the values of its results (value id -> elements), or "raised".
struct StatementValues {
  bool raised = false;
  std::map<int, std::vector<double>> values;
};

std::map<size_t, StatementValues> statement_values(const Records& records) {
  std::map<size_t, StatementValues> out;
  for (const std::string& line : records.lines) {
    const std::vector<std::string> f = split(line, ' ');
    if (f.size() >= 2 && f[0].size() >= 2 && f[0][0] == 's' &&
        (f[1] == "raise" || f[1] == "skip")) {
      try {
        out[std::stoul(f[0].substr(1))].raised = true;
      } catch (const std::exception&) {
      }
    }
    if (std::optional<ValueLine> v = parse_value_line(line)) {
      out[v->stmt].values[v->value] = std::move(v->values);
    }
  }
  return out;
}

double dot(const std::vector<double>& a, const std::vector<double>& b, double* magnitude) {
  double total = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    total += a[i] * b[i];
    *magnitude += std::fabs(a[i] * b[i]);
  }
  return a.size() == b.size() ? total : std::nan("");
}

// One statement's answers: the value, the gradients (reverse) and <c, J t>.
struct Answers {
  bool available = false;
  std::vector<double> value;
  std::vector<std::vector<double>> grads;
  double directional = 0, magnitude = 0;
};

Answers answers(const Stmt& s, const Mode& mode, const StatementValues* v,
                const std::vector<double>& cotangent,
                const std::vector<std::vector<double>>& tangents) {
  Answers a;
  if (!v || v->raised) return a;
  for (int r : s.results) {
    if (!v->values.count(r)) return a;
  }
  a.available = true;
  a.value = v->values.at(s.results[0]);
  if (mode.reverse) {
    for (size_t i = 1; i < s.results.size(); ++i) {
      a.grads.push_back(v->values.at(s.results[i]));
      a.directional += dot(a.grads.back(), tangents.at(i - 1), &a.magnitude);
    }
  } else {
    a.directional = dot(cotangent, v->values.at(s.results[1]), &a.magnitude);
  }
  return a;
}

}  // namespace

Tensor mode_leaf_value(const Stmt& leaf) {
  return ops::uniform(leaf.shape, -1.0, 1.0, leaf.seed, DType::kFloat64);
}

ModeLayout mode_layout(const ConformanceProgram& modes) {
  ModeLayout out;
  for (const Stmt& s : modes.stmts) {
    if (s.kind == StmtKind::kLeaf) out.leaves.push_back(s);
    if (s.kind == StmtKind::kTransform && out.body.empty()) {
      out.body = s.body;
      out.primals = static_cast<size_t>(s.num_primals);
    }
  }
  return out;
}

std::optional<FunctionalCore> functional_core(const ConformanceProgram& p) {
  std::map<int, size_t> maker;
  std::optional<std::set<size_t>> best;
  for (size_t i = 0; i < p.stmts.size(); ++i) {
    for (int r : p.stmts[i].results) maker[r] = i;
    const Stmt& s = p.stmts[i];
    if (s.kind != StmtKind::kOp || s.results.size() != 1) continue;
    std::optional<std::set<size_t>> cone = pure_cone(p, maker, s.results[0]);
    if (cone && (!best || cone->size() >= best->size())) best = std::move(cone);
  }
  if (!best) return std::nullopt;
  FunctionalCore core;
  std::map<int, int> number;  // program value -> body value
  for (size_t i : *best) {
    const Stmt& s = p.stmts[i];
    if (s.kind != StmtKind::kLeaf) continue;
    number[s.results[0]] = static_cast<int>(core.leaves.size());
    core.leaves.push_back(s);
  }
  int next = static_cast<int>(core.leaves.size());
  for (size_t i : *best) {
    const Stmt& s = p.stmts[i];
    if (s.kind != StmtKind::kOp) continue;
    Instr in = s.instr;
    for (int& a : in.args) a = number.at(a);
    number[s.results[0]] = next++;
    core.body.push_back(in);
  }
  return core;
}

const std::vector<Mode>& pytorch_modes() {
  static const std::vector<Mode> modes = {
      {TransformKind::kVjp, "torch.func.vjp", true},
      {TransformKind::kEagerVjp, "torch.autograd.grad", true},
      {TransformKind::kCompiledVjp, "torch.compile(aot_eager)", true},
      {TransformKind::kJvp, "torch.func.jvp", false},
      {TransformKind::kDualJvp, "forward_ad", false},
  };
  return modes;
}

ConformanceProgram mode_program(const FunctionalCore& core) {
  ConformanceProgram p;
  const int k = static_cast<int>(core.leaves.size());
  std::vector<int> primals;
  for (int i = 0; i < k; ++i) {
    Stmt leaf = core.leaves[static_cast<size_t>(i)];
    leaf.results = {i};
    leaf.flag = true;
    leaf.record_flags.clear();
    leaf.record_grads.clear();
    p.stmts.push_back(leaf);
    primals.push_back(i);
  }
  TensorList values;
  for (const Stmt& s : core.leaves) values.push_back(mode_leaf_value(s));
  const uint64_t base = core.leaves.front().seed * 31 + 7;
  auto extra_leaf = [&](const Shape& shape, uint64_t n) {
    Stmt leaf;
    leaf.kind = StmtKind::kLeaf;
    leaf.shape = shape;
    leaf.seed = base + 7919 * n;
    leaf.results = {static_cast<int>(p.stmts.size())};
    p.stmts.push_back(leaf);
    return leaf.results[0];
  };
  const int cotangent = extra_leaf(evaluate(core.body, values).shape(), 0);
  std::vector<int> tangents;
  for (int i = 0; i < k; ++i) {
    tangents.push_back(extra_leaf(core.leaves[static_cast<size_t>(i)].shape, 1 + i));
  }
  int next = static_cast<int>(p.stmts.size());
  for (const Mode& m : pytorch_modes()) {
    Stmt s;
    s.kind = StmtKind::kTransform;
    s.transform = m.transform;
    s.num_primals = k;
    s.body = core.body;
    s.args = primals;
    if (m.reverse) {
      s.args.push_back(cotangent);
    } else {
      s.args.insert(s.args.end(), tangents.begin(), tangents.end());
    }
    for (int r = 0; r < num_results(m.transform, k); ++r) s.results.push_back(next++);
    p.stmts.push_back(s);
  }
  p.num_values = next;
  return p;
}

namespace {

// The mode program's cotangent c and its tangents t, one per primal, as values.
struct ModeDirections {
  std::vector<double> cotangent;
  std::vector<std::vector<double>> tangents;
};
ModeDirections mode_directions(const ConformanceProgram& modes) {
  const ModeLayout l = mode_layout(modes);
  ModeDirections d{mode_leaf_value(l.leaves.at(l.primals)).to_vector(), {}};
  for (size_t i = 0; i < l.primals; ++i) {
    d.tangents.push_back(mode_leaf_value(l.leaves.at(l.primals + 1 + i)).to_vector());
  }
  return d;
}

}  // namespace

ModeCheckInput mode_check_input(const ConformanceProgram& modes, const Records& pytorch,
                                const Records& engine, std::vector<std::string>* raised) {
  const ModeDirections directions = mode_directions(modes);
  const std::vector<double>& cotangent = directions.cotangent;
  const std::vector<std::vector<double>>& tangents = directions.tangents;
  const std::map<size_t, StatementValues> theirs = statement_values(pytorch);
  const std::map<size_t, StatementValues> ours = statement_values(engine);
  auto find = [](const std::map<size_t, StatementValues>& m, size_t i) {
    const auto it = m.find(i);
    return it == m.end() ? nullptr : &it->second;
  };
  ModeCheckInput in;
  ModeQuantity value{"value", {}, {}, 1};
  std::vector<ModeQuantity> grads;
  for (size_t i = 0; i < tangents.size(); ++i)
    grads.push_back({"grad v" + std::to_string(i), {}, {}, 1});
  ModeQuantity directional{"<c, J t>", {}, {}, 1};
  size_t m = 0;
  for (size_t i = 0; i < modes.stmts.size(); ++i) {
    const Stmt& s = modes.stmts[i];
    if (s.kind != StmtKind::kTransform) continue;
    const Mode& mode = pytorch_modes().at(m++);
    const Answers a = answers(s, mode, find(theirs, i), cotangent, tangents);
    const Answers e = answers(s, mode, find(ours, i), cotangent, tangents);
    if (!a.available) {
      if (raised) raised->push_back(mode.name);
      continue;
    }
    // The engine's witness: its vjp for the value and the gradients, its jvp for <c, J t>.
    const bool witness = e.available && (mode.transform == TransformKind::kVjp ||
                                         mode.transform == TransformKind::kJvp);
    value.answers.push_back({mode.name, a.value});
    if (witness && mode.reverse) value.engine = {true, e.value};
    for (size_t g = 0; g < a.grads.size() && g < grads.size(); ++g) {
      grads[g].answers.push_back({mode.name, a.grads[g]});
      if (witness) grads[g].engine = {true, e.grads.at(g)};
    }
    directional.answers.push_back({mode.name, {a.directional}});
    directional.scale = std::max(directional.scale, a.magnitude);
    if (witness && !mode.reverse) directional.engine = {true, {e.directional}};
  }
  in.quantities.push_back(value);
  for (ModeQuantity& g : grads) in.quantities.push_back(std::move(g));
  in.quantities.push_back(directional);
  return in;
}

void add_jax_answers(ModeCheckInput& in, const ConformanceProgram& modes, const Records& jax,
                     std::vector<std::string>* raised) {
  const ModeDirections directions = mode_directions(modes);
  const std::vector<double>& cotangent = directions.cotangent;
  const std::vector<std::vector<double>>& tangents = directions.tangents;
  const std::map<size_t, StatementValues> theirs = statement_values(jax);
  size_t m = 0;
  for (size_t i = 0; i < modes.stmts.size(); ++i) {
    const Stmt& s = modes.stmts[i];
    if (s.kind != StmtKind::kTransform) continue;
    const Mode& mode = pytorch_modes().at(m++);
    const char* name = mode.transform == TransformKind::kVjp           ? "jax.vjp"
                       : mode.transform == TransformKind::kCompiledVjp ? "jax.jit(jax.vjp)"
                       : mode.transform == TransformKind::kJvp         ? "jax.jvp"
                       : mode.transform == TransformKind::kDualJvp     ? "jax.jit(jax.jvp)"
                                                                       : nullptr;
    if (!name) continue;
    const auto it = theirs.find(i);
    const Answers a =
        answers(s, mode, it == theirs.end() ? nullptr : &it->second, cotangent, tangents);
    if (!a.available) {
      if (raised) raised->push_back(name);
      continue;
    }
    // The quantities in mode_check_input's order: value, a gradient per primal, <c, J t>.
    in.quantities.front().answers.push_back({name, a.value});
    for (size_t g = 0; g < a.grads.size(); ++g) {
      in.quantities.at(1 + g).answers.push_back({name, a.grads[g]});
    }
    ModeQuantity& directional = in.quantities.back();
    directional.answers.push_back({name, {a.directional}});
    directional.scale = std::max(directional.scale, a.magnitude);
  }
}

bool smooth_at_primals(const ConformanceProgram& modes, double step) {
  const ModeLayout l = mode_layout(modes);
  TensorList x;
  for (size_t i = 0; i < l.primals; ++i) x.push_back(mode_leaf_value(l.leaves[i]));
  const std::vector<double> c = mode_leaf_value(l.leaves.at(l.primals)).to_vector();
  auto objective = [&](const TensorList& at) {
    double unused = 0;
    return dot(c, evaluate(l.body, at).to_vector(), &unused);
  };
  const double f0 = objective(x);
  const Closeness one_sided{1e-4, 1e-4};
  for (size_t i = 0; i < x.size(); ++i) {
    const std::vector<double> xi = x[i].to_vector();
    for (size_t j = 0; j < xi.size(); ++j) {
      TensorList up = x, down = x;
      std::vector<double> u = xi, d = xi;
      u[j] += step;
      d[j] -= step;
      up[i] = ops::from_vector(u, x[i].shape(), DType::kFloat64);
      down[i] = ops::from_vector(d, x[i].shape(), DType::kFloat64);
      const double fu = objective(up), fd = objective(down);
      if (!one_sided.agree((fu - f0) / step, (f0 - fd) / step)) return false;
    }
  }
  return true;
}

ModeCheckRun run_mode_check(const ConformanceProgram& program, ForeignEngine& pytorch,
                            ForeignEngine* jax) {
  ModeCheckRun run;
  const std::optional<FunctionalCore> core = functional_core(program);
  if (!core) {
    run.skipped = "no functional core";
    return run;
  }
  try {
    run.modes = mode_program(*core);  // evaluates the core for its result's shape
  } catch (const std::exception&) {
    run.skipped = "the core raises";
    return run;
  }
  const std::string script = pytorch.script(run.modes, "mode check");
  const Records theirs = pytorch.run(script);
  const Records ours = run_on_engine(run.modes);
  ModeCheckInput in = mode_check_input(run.modes, theirs, ours, &run.raised);
  // The kink test costs a forward per element: only for a disagreement.
  std::optional<bool> smooth;
  auto decide = [&](ModeCheckInput& input) {
    ModeVerdict v = decide_modes(input, mode_tolerance(false));
    if (v.kind != ModeVerdictKind::kInconsistent) return v;
    if (!smooth) smooth = smooth_at_primals(run.modes);
    input.smooth = *smooth;
    return decide_modes(input, mode_tolerance(false));
  };
  run.verdict = decide(in);
  if (jax) {
    add_jax_answers(in, run.modes, jax->run(script), &run.jax_raised);
    run.with_jax = decide(in);
  }
  return run;
}

}  // namespace ag::proptests
