#include "proptests/conformance/reduce.h"

#include <algorithm>
#include <map>
#include <set>

#include "proptests/conformance/corpus.h"
#include "proptests/conformance/triage.h"

namespace ag::proptests {
namespace {

// Renumbers the values densely in order of creation; drops record entries of values that no
// statement makes any more.
ConformanceProgram renumbered(const std::vector<Stmt>& stmts) {
  std::map<int, int> ids;
  for (const Stmt& s : stmts) {
    for (int r : s.results) ids.emplace(r, static_cast<int>(ids.size()));
  }
  auto map_list = [&](std::vector<int>& list, bool keep_none) {
    std::vector<int> out;
    for (int v : list) {
      if (v < 0 && keep_none) out.push_back(v);
      if (v >= 0 && ids.count(v)) out.push_back(ids.at(v));
    }
    list = out;
  };
  ConformanceProgram p;
  for (Stmt s : stmts) {
    map_list(s.results, false);
    map_list(s.args, false);
    map_list(s.instr.args, false);
    map_list(s.outputs, false);
    map_list(s.inputs, false);
    map_list(s.grad_outputs, true);
    map_list(s.record_flags, false);
    map_list(s.record_grads, false);
    p.stmts.push_back(s);
  }
  p.num_values = static_cast<int>(ids.size());
  return p;
}

}  // namespace

ConformanceProgram without(const ConformanceProgram& program, size_t index) {
  std::set<int> gone(program.stmts[index].results.begin(), program.stmts[index].results.end());
  std::vector<Stmt> kept;
  for (size_t i = 0; i < program.stmts.size(); ++i) {
    const Stmt& s = program.stmts[i];
    const std::vector<int> r = reads(s);
    const bool depends = std::any_of(r.begin(), r.end(), [&](int v) { return gone.count(v); });
    if (i == index || (i > index && depends)) {
      gone.insert(s.results.begin(), s.results.end());
      continue;
    }
    kept.push_back(s);
  }
  return renumbered(kept);
}

ConformanceProgram reduce(const ConformanceProgram& program,
                          const std::function<bool(const ConformanceProgram&)>& keeps) {
  ConformanceProgram best = program;
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t i = best.stmts.size(); i-- > 0;) {
      if (i >= best.stmts.size()) continue;
      ConformanceProgram candidate = without(best, i);
      if (keeps(candidate)) {
        best = std::move(candidate);
        progress = true;
      }
    }
  }
  return best;
}

Comparison compare_engines(const ConformanceProgram& program, ForeignEngine& foreign) {
  const Records expected = foreign.run(foreign.script(program, "reduce"));
  const Records actual = run_on_engine_with_timeout(program, 10).value_or(hang_records());
  return compare(program, expected, actual);
}

BothEngines run_both_engines(const ConformanceProgram& program, ForeignEngine& foreign,
                             const std::string& script) {
  const Records actual = run_on_engine_with_timeout(program, 10).value_or(hang_records());
  BothEngines r{foreign.run(script), {}};
  r.comparison = compare(program, r.expected, actual);
  if (!r.comparison.ok()) {
    r.expected = foreign.run_fresh(script);
    r.comparison = compare(program, r.expected, actual);
    r.cleared_by_fresh_process = r.comparison.ok();
  }
  return r;
}

ConformanceProgram reduce_mismatch(const ConformanceProgram& program, ForeignEngine& foreign) {
  const Comparison c = compare_engines(program, foreign);
  if (c.ok()) return program;
  const std::string cls = mismatch_class(program, c.mismatches.front());
  return reduce(program, [&](const ConformanceProgram& candidate) {
    const Comparison k = compare_engines(candidate, foreign);
    return !k.ok() && mismatch_class(candidate, k.mismatches.front()) == cls;
  });
}

}  // namespace ag::proptests
