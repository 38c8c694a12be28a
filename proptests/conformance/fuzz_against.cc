#include "proptests/conformance/fuzz_against.h"

#include <rapidcheck.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

#include "proptests/conformance/comparison.h"
#include "proptests/conformance/foreign_engine.h"
#include "proptests/conformance/mode_check.h"
#include "proptests/conformance/mode_repro.h"
#include "proptests/conformance/program_gen.h"
#include "proptests/conformance/reduce.h"
#include "proptests/foreign/bug_class.h"
#include "proptests/foreign/crash_reduce.h"
#include "proptests/foreign/crash_signature.h"
#include "proptests/foreign/grad_oracles.h"
#include "proptests/foreign/standalone_script.h"
#include "proptests/fuzz_stats.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

std::unique_ptr<ForeignEngine>& foreign() {
  static std::unique_ptr<ForeignEngine> engine;
  return engine;
}

// The mode check's second engine (--modes-jax), or none.
std::unique_ptr<ForeignEngine>& jax() {
  static std::unique_ptr<ForeignEngine> engine;
  return engine;
}

AgainstOptions& options() {
  static AgainstOptions o;
  return o;
}

// RapidCheck shrinks by calling the property on smaller programs, so the last call that failed
// holds the shrunk counterexample.
std::optional<ConformanceProgram>& last_mismatch() {
  static std::optional<ConformanceProgram> program;
  return program;
}

// The programs the foreign engine crashed or hung on, by signature (Note [Crash signatures]).
CrashGroups& crash_groups() {
  static CrashGroups groups;
  return groups;
}

BugClassCoverage& coverage() {
  static BugClassCoverage c;
  return c;
}

// The program being run, as crash and finding logs name it ("seed 34 program 12").
std::string program_id() {
  return "seed " + std::to_string(options().seed) + " program " +
         std::to_string(proptests::fuzz_stats().snapshot().graphs);
}

// Every crashing program, as it happens, for reductions after the run.
void log_crash(const Signature& sig, const std::string& id, const std::string& text) {
  if (options().findings_dir.empty()) return;
  std::ofstream out(options().findings_dir + "/crashes.txt", std::ios::app);
  out << crash_log_entry(sig, id, text);
}

// Keeps the foreign engine's crash on the script of `ran` just run, if it crashed: counted,
// grouped by signature and logged, as program_id() + `where`.
void keep_crash(const ConformanceProgram& ran, const char* where) {
  const std::optional<ForeignOutcome> crash = foreign()->take_crash();
  if (!crash) return;
  const std::optional<Signature> sig = crash_signature(*crash);
  if (!sig) return;
  proptests::fuzz_stats().record("foreign engine crashed", crash_kind_name(sig->kind));
  const std::string id = program_id() + where, text = to_text(ran);
  crash_groups().add(*sig, id, text);
  log_crash(*sig, id, text);
}

// Fresh-process runs of a reduced program; its standalone script then gets 10
// (proptests/foreign/crash_reduce.h).
constexpr int kProgramConfirmations = 3;

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// The mode check's tally (Note [PyTorch against itself]).
struct ModeTally {
  int64_t offered = 0;  // programs offered to it (every modes_every-th is checked)
  int64_t checked = 0;  // ... that had a functional core and ran
  double seconds = 0;   // wall time of those runs, both engines (and JAX)
  std::vector<std::string> findings;
  int64_t jax_disagreements = 0;  // with --modes-jax: JAX's answers against PyTorch's
};

ModeTally& mode_tally() {
  static ModeTally t;
  return t;
}

// Fresh `python` processes for an inconsistency's standalone script.
constexpr int kModeConfirmations = 10;
// Inconsistencies confirmed and written out (each confirmation costs seconds per process).
constexpr size_t kMaxModeFindings = 5;

void write_mode_finding(const ConformanceProgram& program, const ModeCheckRun& run,
                        const std::string& id) {
  const std::string script = mode_repro_script(run.modes);
  int failed = 0;
  for (int i = 0; i < kModeConfirmations; ++i) {
    const std::optional<ForeignOutcome> o = foreign()->run_standalone(script);
    failed += o && o->exit_code != 0 && o->stderr_text.find("AssertionError") != std::string::npos;
  }
  const std::string confirmation = "standalone script: the modes disagreed in " +
                                   std::to_string(failed) + " of " +
                                   std::to_string(kModeConfirmations) + " fresh processes\n";
  mode_tally().findings.push_back(id + ": " + run.verdict.reason + "\n" + confirmation);
  if (options().findings_dir.empty()) return;
  char name[32];
  std::snprintf(name, sizeof(name), "/mode_%02zu", mode_tally().findings.size() - 1);
  const std::string dir = options().findings_dir + name;
  std::filesystem::create_directories(dir);
  write_file(dir + "/program.txt", "# " + id + "\n" + to_text(program));
  write_file(dir + "/modes.txt", to_text(run.modes));
  write_file(dir + "/repro.py", script);
  write_file(dir + "/verdict.txt",
             std::string("mode inconsistency: ") + run.verdict.reason + "\n" + confirmation);
}

// The program's functional core through PyTorch's modes, every modes_every-th program.
void check_modes(const ConformanceProgram& program) {
  ModeTally& tally = mode_tally();
  if (tally.offered++ % std::max(1, options().modes_every) != 0) return;
  auto& stats = proptests::fuzz_stats();
  const auto start = std::chrono::steady_clock::now();
  std::optional<ModeCheckRun> run;
  try {
    run = run_mode_check(program, *foreign(), jax().get());
  } catch (const std::exception& e) {
    stats.record("modes", std::string("failed to run: ") + e.what());
    return;
  }
  if (!run->skipped.empty()) {
    stats.record("modes", "programs skipped: " + run->skipped);
    return;
  }
  ++tally.checked;
  tally.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  coverage().add_mode_check(run->modes);
  const std::string id = program_id();
  keep_crash(run->modes, " (mode check)");
  stats.record("modes", "programs run in the modes");
  const size_t ops = run->modes.stmts.back().body.size();
  stats.record("modes: ops in the functional core", ops <= 1   ? "1"
                                                    : ops <= 3 ? "2-3"
                                                    : ops <= 7 ? "4-7"
                                                               : "8 or more");
  for (const Mode& m : pytorch_modes()) {
    const bool raised = std::count(run->raised.begin(), run->raised.end(), m.name) > 0;
    stats.record(raised ? "modes: programs raised per mode" : "modes: programs run per mode",
                 m.name);
  }
  if (!run->raised.empty() && !options().findings_dir.empty()) {
    std::ofstream out(options().findings_dir + "/mode_raises.txt", std::ios::app);
    out << "# " << id << ": raised in";
    for (const std::string& m : run->raised) out << " " << m;
    out << "\n" << to_text(run->modes) << "\n";
  }
  if (run->with_jax) {
    for (const char* m : {"jax.vjp", "jax.jit(jax.vjp)", "jax.jvp", "jax.jit(jax.jvp)"}) {
      const bool raised = std::count(run->jax_raised.begin(), run->jax_raised.end(), m) > 0;
      stats.record(
          raised ? "modes: programs raised per JAX mode" : "modes: programs run per JAX mode", m);
    }
    stats.record("mode verdict with JAX", mode_verdict_name(run->with_jax->kind));
    if (run->with_jax->enters_findings()) {
      ++tally.jax_disagreements;
      if (!options().findings_dir.empty()) {
        std::ofstream out(options().findings_dir + "/jax_disagreements.txt", std::ios::app);
        out << "# " << id << ": " << run->with_jax->reason << "\n" << to_text(run->modes) << "\n";
      }
    }
  }
  stats.record("mode verdict", mode_verdict_name(run->verdict.kind));
  if (run->verdict.kind == ModeVerdictKind::kUndecided) {
    stats.record("mode verdict: undecided because", run->verdict.reason.substr(0, 40));
  }
  if (run->verdict.enters_findings()) {
    std::fprintf(stderr, "fuzz: mode inconsistency (%s): %s\n%s", id.c_str(),
                 run->verdict.reason.c_str(), to_text(run->modes).c_str());
    if (tally.findings.size() < kMaxModeFindings) write_mode_finding(program, *run, id);
  }
}

void against_foreign_engine() {
  const ConformanceSpec spec = *program_spec_gen(options().hooks);
  const ConformanceProgram program = build_program(spec);
  auto& stats = proptests::fuzz_stats();
  stats.record_graph("program", static_cast<int64_t>(program.stmts.size()));
  for (const Move& m : spec.moves) stats.record("statement", family_name(m));
  for (const HookMove& m : spec.hooks) stats.record("hook statement", hook_move_name(m));
  coverage().add(program);
  const std::string script = foreign()->script(program, "fuzz counterexample");
  // A disagreement counts once a fresh process of the foreign engine gives it too (seen once in
  // 576,287 programs, fuzz seed 32: a PyTorch process that its own segfault had corrupted).
  const BothEngines both = run_both_engines(program, *foreign(), script);
  const Comparison& c = both.comparison;
  // Its records say "reference-failed" (pytorch-internal-error); the crash itself is kept.
  keep_crash(program, "");
  if (both.cleared_by_fresh_process) {
    stats.record("not repeated by a fresh process", foreign()->name());
  }
  for (const auto& [id, n] : c.deviations) stats.record("explained by", id);
  if (options().hooks) {
    const auto fires =
        std::count_if(both.expected.lines.begin(), both.expected.lines.end(),
                      [](const std::string& l) { return l.find(" fire h") != l.npos; });
    stats.record("hooks", fires > 0 ? "programs with a hook firing" : "programs without");
    for (int64_t k = 0; k < fires; ++k) stats.record("hooks", "firings in the expected records");
  }
  if (options().modes) check_modes(program);
  if (!c.ok()) {
    last_mismatch() = program;
    // A disagreement on a grad() result's values goes before the independent answers (Note
    // [Verdicts]): only a PyTorch candidate is a finding about PyTorch.
    std::string verdict;
    if (const std::optional<Verdict> v = grad_value_verdict(program, c.mismatches.front())) {
      stats.record("value verdict", verdict_name(v->kind));
      verdict = std::string("verdict: ") + verdict_name(v->kind) + " (" + v->reason + ")\n";
    }
    RC_FAIL(explain(c) + verdict + "\n" + foreign()->name() + " script (run with python3 " +
            foreign()->runtime_path() + " FILE):\n" + script);
  }
}

// One group's finding: its program reduced and confirmed, its standalone script confirmed.
std::string report_group(const CrashGroups::Group& g, size_t index) {
  const ReducedCrash r =
      reduce_crash(parse_program(g.first_program), g.signature, *foreign(), kProgramConfirmations);
  std::string out =
      "\n" + g.signature.key() + "\nfirst program (" + g.first_id + ", " + std::to_string(g.count) +
      " programs) reduced to " + std::to_string(r.program.stmts.size()) + " statements, " +
      (r.confirmed() ? "confirmed" : "NOT confirmed") + " in " + std::to_string(r.crashes) +
      " of " + std::to_string(r.runs) + " fresh processes:\n" + to_text(r.program);
  // Statements that raise before the crash run inside try/except in the script.
  foreign()->take_crash();
  const std::set<size_t> raising =
      raising_statements(foreign()->run_fresh(foreign()->script(r.program, "raising")));
  foreign()->take_crash();
  const StandaloneRepro repro = find_standalone(r.program, g.signature, raising, *foreign());
  const StandaloneConfirmation& c = repro.confirmation;
  const std::string confirmation =
      repro.script.empty()
          ? "no standalone script: " + repro.why_none + "\n"
          : "standalone script (" + std::to_string(script_lines(repro.script)) +
                " lines besides the import): crashed with the signature in " +
                std::to_string(c.crashes) + " of " + std::to_string(c.runs) + " fresh processes" +
                (c.confirmed() ? " (confirmed)" : " (NOT confirmed)") + "\n";
  out += repro.script.empty() ? confirmation
                              : "as a standalone script:\n" + repro.script + confirmation;
  if (!options().findings_dir.empty()) {
    char name[32];
    std::snprintf(name, sizeof(name), "/finding_%02zu", index);
    const std::string dir = options().findings_dir + name;
    std::filesystem::create_directories(dir);
    write_file(dir + "/signature.txt", g.signature.key() + "\n");
    write_file(dir + "/program.txt", "# first: " + g.first_id + ", " + std::to_string(g.count) +
                                         " programs\n" + to_text(r.program));
    if (!repro.script.empty()) write_file(dir + "/repro.py", repro.script);
    write_file(dir + "/confirmation.txt", "reduced program: " + std::to_string(r.crashes) + " of " +
                                              std::to_string(r.runs) + " fresh processes\n" +
                                              confirmation);
  }
  return out;
}

// The groups' findings, the first `max_groups` (each reduction costs fresh processes).
std::string report_groups(const CrashGroups& groups, size_t max_groups) {
  std::string out = foreign()->name() + " crashed or hung on " + groups.report();
  for (size_t i = 0; i < groups.groups().size() && i < max_groups; ++i) {
    out += report_group(groups.groups()[i], i);
    std::fprintf(stderr, "fuzz: reduced crash group %zu of %zu\n", i + 1, groups.groups().size());
  }
  return out;
}

}  // namespace

std::string register_against(const AgainstOptions& o) {
  options() = o;
  if (o.engine == "jax") {
    // jax_runtime.py runs only transform statements on JAX; the rest of a program would be
    // PyTorch's.
    std::fprintf(stderr,
                 "fuzz: --against jax: JAX runs the functional subset only; use "
                 "--against pytorch --modes-jax\n");
    std::exit(2);
  }
  try {
    foreign() = make_foreign_engine(o.engine);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: --against %s: %s\n", o.engine.c_str(), e.what());
    std::exit(2);
  }
  if (o.modes_jax) {
    try {
      jax() = make_foreign_engine("jax");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz: --modes-jax: %s\n", e.what());
      std::exit(2);
    }
    std::fprintf(stderr, "fuzz: mode check with %s\n", jax()->version().c_str());
  }
  if (!o.findings_dir.empty()) std::filesystem::create_directories(o.findings_dir);
  std::fprintf(stderr, "fuzz: against %s\n", foreign()->version().c_str());
  proptests::register_property("Conformance", "AgainstForeignEngine", &against_foreign_engine);
  return "Conformance.AgainstForeignEngine";
}

std::string reduced_last_mismatch() {
  if (!last_mismatch()) return "";
  const ConformanceProgram reduced = reduce_mismatch(*last_mismatch(), *foreign());
  last_mismatch().reset();
  const Comparison c = compare_engines(reduced, *foreign());
  return "reduced to " + std::to_string(reduced.stmts.size()) + " statements:\n" +
         to_text(reduced) + explain(c) +
         "replay: write the program to repro.txt and run\n"
         "  bazel run -c opt //proptests/conformance:export -- --file repro.txt --against " +
         foreign()->name() + "\n";
}

std::string crash_report() {
  const CrashGroups& groups = crash_groups();
  if (groups.crashes() == 0) return "";
  if (!options().reduce) {
    return foreign()->name() + " crashed or hung on " + groups.report() +
           "(not reduced: --no-reduce; the crashes are logged in --findings, reduce them with "
           "--reduce-crashes)\n";
  }
  return report_groups(groups, 10);
}

std::string reduce_logged_crashes(const AgainstOptions& o, const std::vector<std::string>& logs,
                                  size_t max_groups) {
  register_against(o);
  std::string text;
  for (const std::string& path : logs) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    text += std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Each logged program is run again and grouped by the signature it has now (the log's may come
  // from an older runtime, or another PyTorch); one that no longer crashes is counted apart.
  const CrashGroups logged = read_crash_log(text);
  CrashGroups groups;
  int64_t gone = 0;
  for (const CrashGroups::Group& g : logged.groups()) {
    std::fprintf(stderr, "fuzz: %lld logged programs of signature %s\n",
                 static_cast<long long>(g.count), g.signature.key().c_str());
  }
  for (const auto& [id, program] : read_crash_log_entries(text)) {
    const ConformanceProgram p = parse_program(program);
    std::optional<Signature> sig = running_crash(p, *foreign());
    if (!sig) sig = fresh_crash(p, *foreign());
    if (sig) {
      groups.add(*sig, id, program);
    } else {
      ++gone;
    }
  }
  std::string out = std::to_string(logged.crashes()) + " logged crashing programs, " +
                    std::to_string(gone) + " of them no longer crash\n";
  if (groups.crashes() == 0) return out;
  return out + report_groups(groups, max_groups);
}

std::string bug_class_report() {
  std::string out = coverage().report();
  if (!options().modes) return out;
  const ModeTally& t = mode_tally();
  char line[200];
  std::snprintf(line, sizeof(line),
                "mode check (Note [PyTorch against itself]): %lld of %lld programs offered had a "
                "functional core and ran, %.2f s each; inconsistent: %zu\n",
                static_cast<long long>(t.checked), static_cast<long long>(t.offered),
                t.checked ? t.seconds / static_cast<double>(t.checked) : 0.0, t.findings.size());
  out += line;
  for (const std::string& f : t.findings) out += "  " + f;
  if (options().modes_jax) {
    out += "  with JAX's answers too: " + std::to_string(t.jax_disagreements) +
           " programs where they disagree with PyTorch's (jax_disagreements.txt)\n";
  }
  return out;
}

}  // namespace ag::proptests
