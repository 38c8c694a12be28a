#include "proptests/foreign/bug_class.h"

#include <cstdio>
#include <map>
#include <set>

namespace ag::proptests {
namespace {

// Values that share storage, by union-find over views and detaches (Note [Bug classes]).
class Aliases {
 public:
  void join(int a, int b) { parent_[find(a)] = find(b); }
  int find(int v) {
    auto it = parent_.find(v);
    if (it == parent_.end()) return parent_[v] = v;
    if (it->second == v) return v;
    return it->second = find(it->second);
  }
  // Whether `v` shares storage with some other value.
  bool shared(int v) {
    const int root = find(v);
    int members = 0;
    for (auto& [w, p] : parent_) members += find(w) == root ? 1 : 0;
    return members > 1;
  }

 private:
  std::map<int, int> parent_;
};

}  // namespace

const char* bug_class_name(BugClass c) {
  switch (c) {
    case BugClass::kViewsInplace:
      return "views x in-place";
    case BugClass::kVersionCounter:
      return "version counter";
    case BugClass::kHigherOrder:
      return "higher order";
    case BugClass::kCustomFunction:
      return "custom Function";
    case BugClass::kBackwardInputs:
      return "backward(inputs=)";
    case BugClass::kGradState:
      return ".grad state";
    case BugClass::kHooks:
      return "hooks";
    case BugClass::kModeInconsistency:
      return "mode inconsistency";
  }
  return "?";
}

const char* generated_only_with(BugClass c) {
  if (c == BugClass::kHooks) return "--hooks";  // program_gen.h
  if (c == BugClass::kModeInconsistency) return "--modes";
  return "";
}

std::vector<BugClass> bug_classes(const ConformanceProgram& program) {
  std::set<BugClass> found;
  Aliases aliases;
  std::set<int> read_by_node;  // values an op or a custom Function read (and may have saved)
  bool written_after_read = false;
  for (const Stmt& s : program.stmts) {
    switch (s.kind) {
      case StmtKind::kView:
      case StmtKind::kDetach:
        aliases.join(s.results.at(0), s.args.at(0));
        break;
      case StmtKind::kViewOp:
        if (makes_views(s)) {
          for (int r : s.results) aliases.join(r, s.args.at(0));
        }
        break;
      case StmtKind::kOp:
      case StmtKind::kCustom:
        for (int v : reads(s)) read_by_node.insert(v);
        if (s.kind == StmtKind::kCustom) found.insert(BugClass::kCustomFunction);
        break;
      case StmtKind::kInplace: {
        const int target = s.args.at(0);
        if (aliases.shared(target)) found.insert(BugClass::kViewsInplace);
        const int root = aliases.find(target);
        for (int v : read_by_node) written_after_read |= aliases.find(v) == root;
        break;
      }
      case StmtKind::kGrad:
      case StmtKind::kBackward:
        if (s.create_graph) found.insert(BugClass::kHigherOrder);
        if (s.kind == StmtKind::kBackward && !s.inputs.empty()) {
          found.insert(BugClass::kBackwardInputs);
        }
        if (written_after_read) found.insert(BugClass::kVersionCounter);
        break;
      case StmtKind::kReadGrad:
      case StmtKind::kSetGrad:
        found.insert(BugClass::kGradState);
        break;
      case StmtKind::kHook:
      case StmtKind::kRemoveHook:
      case StmtKind::kRetainGrad:
        found.insert(BugClass::kHooks);
        break;
      case StmtKind::kLeaf:
      case StmtKind::kSetRequiresGrad:
      case StmtKind::kDetachInplace:
      // Forward mode has no class of its own yet (the fuzz driver does not generate it).
      case StmtKind::kDualLevel:
      case StmtKind::kMakeDual:
      case StmtKind::kUnpackDual:
        break;
      case StmtKind::kTransform:
        if (s.transform == TransformKind::kEagerVjp || s.transform == TransformKind::kCompiledVjp ||
            s.transform == TransformKind::kDualJvp) {
          found.insert(BugClass::kModeInconsistency);
        }
        break;
    }
  }
  return std::vector<BugClass>(found.begin(), found.end());
}

void BugClassCoverage::add(const ConformanceProgram& program) {
  ++programs_;
  for (BugClass c : bug_classes(program)) ++counts_[static_cast<size_t>(c)];
}

void BugClassCoverage::add_mode_check(const ConformanceProgram& mode_program) {
  for (BugClass c : bug_classes(mode_program)) ++counts_[static_cast<size_t>(c)];
}

std::string BugClassCoverage::report() const {
  std::string out =
      "programs per bug class (Note [Bug classes]), of " + std::to_string(programs_) + ":\n";
  char line[160];
  for (size_t i = 0; i < kNumBugClasses; ++i) {
    const auto c = static_cast<BugClass>(i);
    const std::string flag = generated_only_with(c);
    std::snprintf(line, sizeof(line), "  %-20s %12lld%s\n", bug_class_name(c),
                  static_cast<long long>(counts_[i]),
                  counts_[i] == 0 && !flag.empty() ? ("  (only with " + flag + ")").c_str() : "");
    out += line;
  }
  return out;
}

}  // namespace ag::proptests
