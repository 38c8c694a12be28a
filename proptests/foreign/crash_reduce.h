#pragma once

// A crash group's program reduced and confirmed (Note [Crash signatures]): the existing reducer
// (proptests/conformance/reduce.h) with "the foreign engine crashes with the same signature" as
// its predicate, then the reduced program run again in fresh processes; it is a finding only when
// every run crashes with the signature. Candidates run in the engine's running process: one that
// crashes it gets a fresh process for the next (ScriptServer), so a candidate that crashes ran
// after scripts that did not, and the fresh confirmations catch a crash an earlier script caused.
// The standalone script (standalone_script.h) of the reduced program is confirmed on its own, in
// fresh processes of plain PyTorch: that is the script a report carries.

#include <optional>
#include <set>
#include <string>

#include "proptests/conformance/foreign_engine.h"
#include "proptests/conformance/program.h"
#include "proptests/foreign/crash_signature.h"

namespace ag::proptests {

// The signature of the foreign engine's crash on `program` in a fresh process, or nothing when
// it did not crash.
std::optional<Signature> fresh_crash(const ConformanceProgram& program, ForeignEngine& foreign);
// The same in the engine's running process.
std::optional<Signature> running_crash(const ConformanceProgram& program, ForeignEngine& foreign);

struct ReducedCrash {
  ConformanceProgram program;
  int runs = 0, crashes = 0;  // the confirmation runs, and those with the signature
  bool confirmed() const { return runs > 0 && crashes == runs; }
};

ReducedCrash reduce_crash(const ConformanceProgram& program, const Signature& signature,
                          ForeignEngine& foreign, int confirmation_runs = 10);

// A standalone script run `runs` times, each in a fresh process (ForeignEngine::run_standalone).
struct StandaloneConfirmation {
  int runs = 0;
  int crashes = 0;                     // runs that crashed with `signature`
  std::optional<Signature> signature;  // `expected`, else the first run's if it crashed
  bool confirmed() const { return runs > 0 && crashes == runs; }
};
StandaloneConfirmation confirm_standalone(const std::string& script, ForeignEngine& foreign,
                                          int runs = 10, const Signature* expected = nullptr);

// The statements whose records say they raised ("s3 raise ..."), for StandaloneOptions::raising.
std::set<size_t> raising_statements(const Records& records);

// The shortest standalone script of `program` that crashes with `signature` (the reduced
// program's): the styles tried in order, compact Functions with random leaves, compact with the
// program's leaves, then the full form (standalone_script.h), each run once; the first that
// crashes with the signature is confirmed `runs` times. `raising` as in StandaloneOptions.
// Empty script when no style crashes with it (or the program has no standalone spelling).
struct StandaloneRepro {
  std::string script;
  StandaloneConfirmation confirmation;
  std::string why_none;  // when the script is empty
};
StandaloneRepro find_standalone(const ConformanceProgram& program, const Signature& signature,
                                const std::set<size_t>& raising, ForeignEngine& foreign,
                                int runs = 10);

}  // namespace ag::proptests
