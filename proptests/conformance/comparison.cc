#include "proptests/conformance/comparison.h"

#include <algorithm>
#include <climits>

#include "proptests/conformance/deviations.h"
#include "proptests/conformance/text.h"

namespace ag::conformance {
namespace {

// "s12" -> 12; "end" -> INT_MAX (after every statement); else -1.
int stmt_of(const std::string& token) {
  if (token == "end") return INT_MAX;
  if (token.size() < 2 || token[0] != 's') return -1;
  return std::atoi(token.c_str() + 1);
}

int value_of(const std::string& token) {
  return token.size() >= 2 && token[0] == 'v' ? std::atoi(token.c_str() + 1) : -1;
}

// What the expected records have said so far, for the deviation rules.
class Context {
 public:
  explicit Context(const Program& p) : program_(p) {}

  // Takes in an expected line that was matched (or excused).
  void observe(const std::string& line) {
    const std::vector<std::string> t = split(line, ' ');
    if (t.size() < 2) return;
    const int stmt = stmt_of(t[0]);
    if (stmt < 0 || stmt == INT_MAX) return;
    // "sN vK [..] rg=.. leaf=X ..." and "sN flags vK [..] rg=.. leaf=X"
    const size_t v = t[1] == "flags" ? 2 : 1;
    if (v < t.size() && value_of(t[v]) >= 0) {
      for (const std::string& tok : t) {
        if (tok.rfind("leaf=", 0) == 0) is_leaf_[value_of(t[v])] = tok == "leaf=1";
      }
    }
    // A backward() that was attempted: PyTorch made its non-leaf inputs retain grad.
    if ((t[1] == "ok" || t[1] == "raise") && stmt < static_cast<int>(program_.stmts.size())) {
      const Stmt& s = program_.stmts[stmt];
      if (s.kind != StmtKind::kBackward) return;
      for (int in : s.inputs) {
        if (!leaf(in) && !retained_since_.count(in)) retained_since_[in] = stmt;
      }
    }
  }

  bool leaf(int v) const {
    const auto it = is_leaf_.find(v);
    return it == is_leaf_.end() || it->second;
  }
  bool retained_before(int v, int stmt) const {
    const auto it = retained_since_.find(v);
    return it != retained_since_.end() && it->second < stmt;
  }
  const Program& program() const { return program_; }

 private:
  const Program& program_;
  std::map<int, bool> is_leaf_;
  std::map<int, int> retained_since_;
};

enum class Excuse { kNone, kSkipExpected, kSkipBoth, kStop };

// Deviation [backward-inputs-grad-fn] (PyTorch issue 92331): PyTorch runs the grad_fn of a
// non-leaf input of backward(inputs=...); this engine does not. So PyTorch may log a custom
// Function's backward that needs nothing, and may raise where that grad_fn cannot run (its saved
// tensors freed or modified); after such a raise the two programs' states differ for good.
Excuse backward_inputs_grad_fn(const Context& c, const std::vector<std::string>& e,
                               const std::vector<std::string>& a) {
  const int stmt = stmt_of(e[0]);
  if (stmt < 0 || stmt >= static_cast<int>(c.program().stmts.size())) return Excuse::kNone;
  const Stmt& s = c.program().stmts[stmt];
  if (s.kind != StmtKind::kBackward || s.inputs.empty()) return Excuse::kNone;
  if (e.size() == 4 && e[1] == "needs" && e[3].find('1') == std::string::npos) {
    return Excuse::kSkipExpected;
  }
  const bool non_leaf_input =
      std::any_of(s.inputs.begin(), s.inputs.end(), [&](int v) { return !c.leaf(v); });
  if (e.size() == 2 && e[1] == "raise" && a.size() == 2 && a[0] == e[0] && a[1] == "ok" &&
      non_leaf_input) {
    return Excuse::kStop;
  }
  return Excuse::kNone;
}

// Deviation [backward-inputs-retain-grad] (PyTorch PR 60521): PyTorch makes a non-leaf input of
// backward(inputs=...) retain_grad() for good, so later calls through it update its .grad; this
// engine has no retain_grad. The .grad records of such a tensor after that call are not
// compared (the generator does not read them into values).
Excuse backward_inputs_retain_grad(const Context& c, const std::vector<std::string>& e,
                                   const std::vector<std::string>& a) {
  // "sN grad vK ..." or "end vK grad ...", the same record on both sides.
  int v = -1;
  if (e.size() >= 3 && e[1] == "grad") v = value_of(e[2]);
  if (e.size() >= 3 && e[0] == "end" && e[2] == "grad") v = value_of(e[1]);
  if (v < 0 || a.size() < 3 || a[0] != e[0] || a[1] != e[1] || a[2] != e[2]) return Excuse::kNone;
  return c.retained_before(v, stmt_of(e[0])) ? Excuse::kSkipBoth : Excuse::kNone;
}

Excuse excuse(const Context& c, const std::string& expected, const std::string& actual,
              std::string* id) {
  const std::vector<std::string> e = split(expected, ' '), a = split(actual, ' ');
  if (e.size() < 2) return Excuse::kNone;
  if (Excuse x = backward_inputs_grad_fn(c, e, a); x != Excuse::kNone) {
    *id = note_deviation("backward-inputs-grad-fn", "backward-inputs-grad-fn");
    return x;
  }
  if (Excuse x = backward_inputs_retain_grad(c, e, a); x != Excuse::kNone) {
    *id = note_deviation("backward-inputs-retain-grad", "backward-inputs-retain-grad");
    return x;
  }
  return Excuse::kNone;
}

}  // namespace

Comparison compare(const Program& program, const Records& expected, const Records& actual,
                   const Tolerance& tolerance) {
  Comparison out;
  Context context(program);
  size_t i = 0, j = 0;
  const std::string none = "(no line)";
  while (i < expected.lines.size() || j < actual.lines.size()) {
    const std::string& e = i < expected.lines.size() ? expected.lines[i] : none;
    const std::string& a = j < actual.lines.size() ? actual.lines[j] : none;
    if (lines_agree(e, a, tolerance, out.numbers)) {
      context.observe(e);
      ++i, ++j;
      continue;
    }
    std::string id;
    switch (excuse(context, e, a, &id)) {
      case Excuse::kNone:
        out.mismatches.push_back({i, e, a});
        return out;
      case Excuse::kSkipExpected:
        context.observe(e);
        ++i;
        break;
      case Excuse::kSkipBoth:
        context.observe(e);
        ++i, ++j;
        break;
      case Excuse::kStop:
        ++out.deviations[id];
        return out;
    }
    ++out.deviations[id];
  }
  return out;
}

std::string explain(const Comparison& c) {
  if (c.ok()) return "records agree\n";
  const Mismatch& m = c.mismatches.front();
  return "first mismatch at record line " + std::to_string(m.line + 1) + ":\n  expected: " +
         m.expected + "\n  actual:   " + m.actual + "\n";
}

}  // namespace ag::conformance
