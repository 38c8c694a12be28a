#include "proptests/foreign/crash_reduce.h"

#include "proptests/conformance/reduce.h"

namespace ag::proptests {

std::optional<Signature> fresh_crash(const ConformanceProgram& program, ForeignEngine& foreign) {
  foreign.take_crash();  // an earlier script's
  foreign.run_fresh(foreign.script(program, "crash reduction"));
  const std::optional<ForeignOutcome> crash = foreign.take_crash();
  return crash ? crash_signature(*crash) : std::nullopt;
}

ReducedCrash reduce_crash(const ConformanceProgram& program, const Signature& signature,
                          ForeignEngine& foreign, int confirmation_runs) {
  ReducedCrash out;
  out.program = reduce(program, [&](const ConformanceProgram& candidate) {
    const std::optional<Signature> sig = fresh_crash(candidate, foreign);
    return sig && *sig == signature;
  });
  for (int i = 0; i < confirmation_runs; ++i) {
    const std::optional<Signature> sig = fresh_crash(out.program, foreign);
    ++out.runs;
    out.crashes += sig && *sig == signature ? 1 : 0;
  }
  return out;
}

}  // namespace ag::proptests
