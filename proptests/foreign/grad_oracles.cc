#include "proptests/foreign/grad_oracles.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "engine/grad_mode.h"
#include "ops/ops.h"
#include "proptests/conformance/text.h"
#include "proptests/ops/composition.h"

namespace ag::proptests {
namespace {

// The values that `targets` depend on, through the statements before `index`; nothing when one
// of them is made by a statement other than a leaf or an op, or an in-place op, a detach_ (which
// cuts a value's history) or a hook comes before `index`.
std::optional<std::set<size_t>> cone(const ConformanceProgram& p, size_t index,
                                     const std::vector<int>& targets) {
  std::map<int, size_t> maker;  // value -> statement
  for (size_t i = 0; i < index; ++i) {
    // A hook may scale a gradient the oracles do not know of.
    const StmtKind kind = p.stmts[i].kind;
    if (kind == StmtKind::kInplace || kind == StmtKind::kDetachInplace || kind == StmtKind::kHook) {
      return std::nullopt;
    }
    for (int r : p.stmts[i].results) maker[r] = i;
  }
  std::set<size_t> stmts;
  std::vector<int> todo(targets.begin(), targets.end());
  while (!todo.empty()) {
    const int v = todo.back();
    todo.pop_back();
    if (v < 0) continue;
    const auto it = maker.find(v);
    if (it == maker.end()) return std::nullopt;
    const Stmt& s = p.stmts[it->second];
    if (s.kind != StmtKind::kLeaf && s.kind != StmtKind::kOp) return std::nullopt;
    if (!stmts.insert(it->second).second) continue;
    if (s.kind == StmtKind::kOp) todo.insert(todo.end(), s.instr.args.begin(), s.instr.args.end());
  }
  return stmts;
}

std::vector<int> grad_targets(const Stmt& s) {
  std::vector<int> t = s.outputs;
  t.insert(t.end(), s.grad_outputs.begin(), s.grad_outputs.end());
  return t;
}

// sum_k <g_k, o_k> with the input leaf's values replaced by `input`; NaN when shapes differ.
double objective(const ConformanceProgram& p, const std::set<size_t>& stmts, const Stmt& grad,
                 int input, const std::vector<double>& input_values) {
  NoGradGuard no_grad;
  std::map<int, Tensor> values;
  for (size_t i : stmts) {
    const Stmt& s = p.stmts[i];
    if (s.kind == StmtKind::kLeaf) {
      values[s.results[0]] = s.results[0] == input
                                 ? ops::from_vector(input_values, s.shape, DType::kFloat64)
                                 : ops::uniform(s.shape, -1.0, 1.0, s.seed, DType::kFloat64);
    } else {
      TensorList args;
      for (int a : s.instr.args) args.push_back(values.at(a));
      values[s.results[0]] = run_instr(s.instr, args);
    }
  }
  double total = 0;
  for (size_t k = 0; k < grad.outputs.size(); ++k) {
    const std::vector<double> o = values.at(grad.outputs[k]).to_vector();
    const int g = k < grad.grad_outputs.size() ? grad.grad_outputs[k] : -1;
    const std::vector<double> w =
        g < 0 ? std::vector<double>(o.size(), 1.0) : values.at(g).to_vector();
    if (w.size() != o.size()) return std::nan("");
    for (size_t i = 0; i < o.size(); ++i) total += w[i] * o[i];
  }
  return total;
}

const Stmt* leaf_statement(const ConformanceProgram& p, int value) {
  for (const Stmt& s : p.stmts) {
    if (s.kind == StmtKind::kLeaf && s.results[0] == value) return &s;
  }
  return nullptr;
}

}  // namespace

FiniteDifferenceAnswer grad_finite_differences(const ConformanceProgram& p, size_t index,
                                               size_t which, double step) {
  FiniteDifferenceAnswer out;
  if (index >= p.stmts.size() || p.stmts[index].kind != StmtKind::kGrad) return out;
  const Stmt& grad = p.stmts[index];
  if (which >= grad.inputs.size()) return out;
  const int input = grad.inputs[which];
  const Stmt* leaf = leaf_statement(p, input);
  if (!leaf) return out;
  std::vector<int> targets = grad_targets(grad);
  targets.push_back(input);
  const std::optional<std::set<size_t>> stmts = cone(p, index, targets);
  if (!stmts) return out;
  const std::vector<double> x =
      ops::uniform(leaf->shape, -1.0, 1.0, leaf->seed, DType::kFloat64).to_vector();
  const double f0 = objective(p, *stmts, grad, input, x);
  // One-sided differences agree with the central one at a smooth point; at a kink within the
  // step they differ by the jump of the derivative.
  const Closeness one_sided{1e-4, 1e-4};
  out.available = true;
  out.smooth = true;
  for (size_t j = 0; j < x.size(); ++j) {
    std::vector<double> up = x, down = x;
    up[j] += step;
    down[j] -= step;
    const double fu = objective(p, *stmts, grad, input, up);
    const double fd = objective(p, *stmts, grad, input, down);
    out.values.push_back((fu - fd) / (2 * step));
    if (!one_sided.agree((fu - f0) / step, (f0 - fd) / step)) out.smooth = false;
  }
  return out;
}

bool depends_on_random_op(const ConformanceProgram& p, size_t index) {
  if (index >= p.stmts.size()) return false;
  std::map<int, size_t> maker;
  for (size_t i = 0; i < index; ++i) {
    for (int r : p.stmts[i].results) maker[r] = i;
  }
  std::set<size_t> seen;
  std::vector<int> todo = reads(p.stmts[index]);
  while (!todo.empty()) {
    const int v = todo.back();
    todo.pop_back();
    const auto it = maker.find(v);
    if (it == maker.end() || !seen.insert(it->second).second) continue;
    const Stmt& s = p.stmts[it->second];
    if (s.kind == StmtKind::kOp && (s.instr.op == Op::kDropout || s.instr.op == Op::kDropout2d) &&
        s.instr.scalar != 0) {
      return true;
    }
    const std::vector<int> r = reads(s);
    todo.insert(todo.end(), r.begin(), r.end());
  }
  return false;
}

VerdictInput grad_verdict_input(const ConformanceProgram& p, size_t index, size_t which,
                                std::vector<double> ours, std::vector<double> pytorch,
                                double step) {
  VerdictInput in;
  in.ours = std::move(ours);
  in.pytorch = std::move(pytorch);
  in.finite_differences = grad_finite_differences(p, index, which, step);
  in.has_random_op = depends_on_random_op(p, index);
  return in;
}

std::optional<Verdict> grad_value_verdict(const ConformanceProgram& p, const Mismatch& m) {
  const std::optional<ValueLine> theirs = parse_value_line(m.expected);
  const std::optional<ValueLine> ours = parse_value_line(m.actual);
  if (!theirs || !ours || theirs->stmt != ours->stmt || theirs->value != ours->value ||
      theirs->stmt >= p.stmts.size()) {
    return std::nullopt;
  }
  const Stmt& s = p.stmts[theirs->stmt];
  if (s.kind != StmtKind::kGrad) return std::nullopt;
  for (size_t which = 0; which < s.results.size(); ++which) {
    if (s.results[which] == theirs->value) {
      return decide(grad_verdict_input(p, theirs->stmt, which, ours->values, theirs->values));
    }
  }
  return std::nullopt;
}

}  // namespace ag::proptests
