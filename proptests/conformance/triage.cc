#include "proptests/conformance/triage.h"

#include <algorithm>
#include <cstdio>

#include "proptests/conformance/deviations.h"
#include "proptests/conformance/text.h"

namespace ag::proptests {
namespace {

std::string stmt_name(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::kLeaf:
      return "leaf";
    case StmtKind::kOp:
      return proptests::op_name(s.instr.op);
    case StmtKind::kView:
      return "view";
    case StmtKind::kViewOp:
      return view_op_name(s.view_op) + std::string(s.flag ? " (no_grad)" : "");
    case StmtKind::kDetach:
      return "detach";
    case StmtKind::kDetachInplace:
      return "detach_";
    case StmtKind::kInplace:
      return inplace_name(s.inplace) + std::string(s.flag ? " (no_grad)" : "");
    case StmtKind::kSetRequiresGrad:
      return "requires_grad_";
    case StmtKind::kCustom:
      return std::string("custom ") + custom_name(s.custom);
    case StmtKind::kGrad:
      return s.create_graph ? "grad (create_graph)" : "grad";
    case StmtKind::kBackward:
      return s.create_graph ? "backward (create_graph)" : "backward";
    case StmtKind::kReadGrad:
      return "grad_of";
    case StmtKind::kSetGrad:
      return "set_grad";
    case StmtKind::kHook:
      return hook_kind_name(s.hook_kind);
    case StmtKind::kRemoveHook:
      return "remove_hook";
    case StmtKind::kRetainGrad:
      return "retain_grad";
    case StmtKind::kDualLevel:
      return s.flag ? "dual_level enter" : "dual_level exit";
    case StmtKind::kMakeDual:
      return "make_dual";
    case StmtKind::kUnpackDual:
      return "unpack_dual";
    case StmtKind::kTransform:
      return std::string("func ") + transform_name(s.transform);
  }
  return "?";
}

// Which field of "v7 [2,3] rg=1 leaf=0 = ..." differs.
std::string field_difference(const std::vector<std::string>& e, const std::vector<std::string>& a,
                             size_t from) {
  if (e.size() <= from || a.size() <= from) return "missing";
  if ((e[from] == "none") != (a[from] == "none")) {
    return e[from] == "none" ? "defined here only" : "none here only";
  }
  for (size_t i = from; i < std::min(e.size(), a.size()); ++i) {
    if (e[i] == a[i]) continue;
    if (e[i].rfind("rg=", 0) == 0) return "requires_grad";
    if (e[i].rfind("leaf=", 0) == 0) return "is_leaf";
    if (e[i].front() == '[') return "shape";
    return "values";
  }
  return e.size() != a.size() ? "number of values" : "values";
}

}  // namespace

std::string mismatch_class(const ConformanceProgram& p, const Mismatch& m) {
  const std::vector<std::string> e = split(m.expected, ' '), a = split(m.actual, ' ');
  if (e.empty() || a.empty()) return "records end early";
  if (a[0] == "hang:") return "the engine hangs";
  if (e[0] == "end" || a[0] == "end") {
    if (e[0] != a[0]) return "different statements ran";
    const bool grad = e.size() > 2 && e[2] == "grad";
    return std::string("end of program: ") + (grad ? ".grad " : "") +
           field_difference(e, a, grad ? 3 : 2);
  }
  if (e[0] != a[0] || e[0][0] != 's') return "different statements ran";
  const size_t index = std::stoul(e[0].substr(1));
  const std::string name = index < p.stmts.size() ? stmt_name(p.stmts[index]) : "?";
  if (a.size() > 1 && a[1] == "crash") return name + ": crashes (not an ag::Error)";
  if (e.size() > 1 && a.size() > 1 && e[1] != a[1]) {
    if (e[1] == "raise") return name + ": raises in the reference only";
    if (a[1] == "raise") return name + ": raises here only";
    if (e[1] == "needs" || a[1] == "needs") return name + ": custom Function needs_input_grad";
    return name + ": different records";
  }
  if (e.size() > 1 && e[1] == "raise" && e != a) return name + ": raises another error";
  if (e.size() > 1 && e[1] == "flags") return name + ": aliases' " + field_difference(e, a, 3);
  if (e.size() > 1 && e[1] == "grad") return name + ": .grad " + field_difference(e, a, 3);
  if (e.size() > 1 && e[1] == "needs") return name + ": custom Function needs_input_grad";
  return name + ": result " + field_difference(e, a, 2);
}

void Triage::add(const std::string& id, const ConformanceProgram& program, const Comparison& c) {
  ++programs_;
  numbers_.numbers += c.numbers.numbers;
  numbers_.bitwise += c.numbers.bitwise;
  numbers_.max_error = std::max(numbers_.max_error, c.numbers.max_error);
  for (const auto& [x, n] : c.deviations) {
    deviations_[x] += n;
    if (examples_[x].size() < 3) examples_[x].push_back(id);
  }
  if (!c.stopped_by.empty()) ++stopped_[c.stopped_by];
  if (c.ok()) return;
  ++mismatching_;
  classes_[mismatch_class(program, c.mismatches.front())].push_back(id);
}

std::string Triage::report() const {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof(line), "%lld programs, %lld mismatching\n",
                static_cast<long long>(programs_), static_cast<long long>(mismatching_));
  out += line;
  std::vector<std::pair<std::string, std::vector<std::string>>> sorted(classes_.begin(),
                                                                       classes_.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& x, const auto& y) { return x.second.size() > y.second.size(); });
  for (const auto& [cls, ids] : sorted) {
    std::string examples;
    for (size_t i = 0; i < std::min<size_t>(5, ids.size()); ++i) {
      examples += (i ? ", " : "") + ids[i];
    }
    std::snprintf(line, sizeof(line), "  %5zu  %-58s e.g. %s\n", ids.size(), cls.c_str(),
                  examples.c_str());
    out += line;
  }
  std::snprintf(line, sizeof(line),
                "%lld numbers compared, %.4f%% bitwise equal, largest difference %.3g of the "
                "tolerance\n",
                static_cast<long long>(numbers_.numbers),
                numbers_.numbers ? 100.0 * static_cast<double>(numbers_.bitwise) /
                                       static_cast<double>(numbers_.numbers)
                                 : 100.0,
                numbers_.max_error);
  out += line;
  for (const auto& [id, n] : deviations_) {
    const Explanation* x = find_explanation(id);
    const auto stopped = stopped_.find(id);
    std::string examples;
    for (const std::string& e : examples_.at(id)) examples += (examples.empty() ? "" : ", ") + e;
    std::snprintf(
        line, sizeof(line), "%s %-30s excused %5lld lines, ended %4lld programs early, e.g. %s\n",
        x && x->kind == ExplanationKind::kOpenBug ? "open bug " : "deviation", id.c_str(),
        static_cast<long long>(n),
        static_cast<long long>(stopped == stopped_.end() ? 0 : stopped->second), examples.c_str());
    out += line;
  }
  return out;
}

}  // namespace ag::proptests
