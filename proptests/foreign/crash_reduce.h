#pragma once

// A crash group's program reduced and confirmed (Note [Crash signatures]): the existing reducer
// (proptests/conformance/reduce.h) with "the foreign engine crashes with the same signature in a
// fresh process" as its predicate, then the reduced program run again in fresh processes; it is
// a finding only when every run crashes with the signature.

#include <optional>
#include <string>

#include "proptests/conformance/foreign_engine.h"
#include "proptests/conformance/program.h"
#include "proptests/foreign/crash_signature.h"

namespace ag::proptests {

// The signature of the foreign engine's crash on `program` in a fresh process, or nothing when
// it did not crash.
std::optional<Signature> fresh_crash(const ConformanceProgram& program, ForeignEngine& foreign);

struct ReducedCrash {
  ConformanceProgram program;
  int runs = 0, crashes = 0;  // the confirmation runs, and those with the signature
  bool confirmed() const { return runs > 0 && crashes == runs; }
};

ReducedCrash reduce_crash(const ConformanceProgram& program, const Signature& signature,
                          ForeignEngine& foreign, int confirmation_runs = 10);

}  // namespace ag::proptests
