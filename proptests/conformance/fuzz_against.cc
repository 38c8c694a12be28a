#include "proptests/conformance/fuzz_against.h"

#include <rapidcheck.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "proptests/conformance/comparison.h"
#include "proptests/conformance/foreign_engine.h"
#include "proptests/conformance/program_gen.h"
#include "proptests/conformance/reduce.h"
#include "proptests/foreign/crash_reduce.h"
#include "proptests/foreign/crash_signature.h"
#include "proptests/foreign/standalone_script.h"
#include "proptests/fuzz_stats.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

std::unique_ptr<ForeignEngine>& foreign() {
  static std::unique_ptr<ForeignEngine> engine;
  return engine;
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

void against_foreign_engine() {
  const ConformanceSpec spec = *program_spec_gen();
  const ConformanceProgram program = build_program(spec);
  auto& stats = proptests::fuzz_stats();
  stats.record_graph("program", static_cast<int64_t>(program.stmts.size()));
  for (const Move& m : spec.moves) stats.record("statement", family_name(m));
  const std::string script = foreign()->script(program, "fuzz counterexample");
  // A disagreement counts once a fresh process of the foreign engine gives it too (seen once in
  // 576,287 programs, fuzz seed 32: a PyTorch process that its own segfault had corrupted).
  const BothEngines both = run_both_engines(program, *foreign(), script);
  const Comparison& c = both.comparison;
  // Its records say "reference-failed" (pytorch-internal-error); the crash itself is kept.
  if (const std::optional<ForeignOutcome> crash = foreign()->take_crash()) {
    if (const std::optional<Signature> sig = crash_signature(*crash)) {
      stats.record("foreign engine crashed", crash_kind_name(sig->kind));
      crash_groups().add(*sig, "program " + std::to_string(stats.snapshot().graphs),
                         to_text(program));
    }
  }
  if (both.cleared_by_fresh_process) {
    stats.record("not repeated by a fresh process", foreign()->name());
  }
  for (const auto& [id, n] : c.deviations) stats.record("explained by", id);
  if (!c.ok()) {
    last_mismatch() = program;
    RC_FAIL(explain(c) + "\n" + foreign()->name() + " script (run with python3 " +
            foreign()->runtime_path() + " FILE):\n" + script);
  }
}

}  // namespace

std::string register_against(const std::string& engine) {
  try {
    foreign() = make_foreign_engine(engine);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: --against %s: %s\n", engine.c_str(), e.what());
    std::exit(2);
  }
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
  std::string out = foreign()->name() + " crashed or hung on " + groups.report();
  // Each group's first program reduced in fresh processes, then confirmed 10 times; the first 10
  // groups (each reduction runs a fresh process per candidate).
  for (size_t i = 0; i < groups.groups().size() && i < 10; ++i) {
    const CrashGroups::Group& g = groups.groups()[i];
    const ReducedCrash r = reduce_crash(parse_program(g.first_program), g.signature, *foreign());
    out += "\n" + g.signature.key() + "\nfirst program (" + g.first_id + ") reduced to " +
           std::to_string(r.program.stmts.size()) + " statements, " +
           (r.confirmed() ? "confirmed" : "NOT confirmed") + " in " + std::to_string(r.crashes) +
           " of " + std::to_string(r.runs) + " fresh processes:\n" + to_text(r.program);
    try {
      out += "as a standalone script:\n" + render_standalone(r.program);
    } catch (const StandaloneError& e) {
      out += std::string("no standalone script: ") + e.what() + "\n";
    }
  }
  return out;
}

}  // namespace ag::proptests
