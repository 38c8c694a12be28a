#include "proptests/foreign/crash_reduce.h"

#include "proptests/conformance/reduce.h"
#include "proptests/conformance/text.h"
#include "proptests/foreign/standalone_script.h"

namespace ag::proptests {

std::optional<Signature> fresh_crash(const ConformanceProgram& program, ForeignEngine& foreign) {
  foreign.take_crash();  // an earlier script's
  foreign.run_fresh(foreign.script(program, "crash reduction"));
  const std::optional<ForeignOutcome> crash = foreign.take_crash();
  return crash ? crash_signature(*crash) : std::nullopt;
}

std::optional<Signature> running_crash(const ConformanceProgram& program, ForeignEngine& foreign) {
  foreign.take_crash();
  foreign.run(foreign.script(program, "crash reduction"));
  const std::optional<ForeignOutcome> crash = foreign.take_crash();
  return crash ? crash_signature(*crash) : std::nullopt;
}

ReducedCrash reduce_crash(const ConformanceProgram& program, const Signature& signature,
                          ForeignEngine& foreign, int confirmation_runs) {
  ReducedCrash out;
  out.program = reduce(program, [&](const ConformanceProgram& candidate) {
    const std::optional<Signature> sig = running_crash(candidate, foreign);
    return sig && *sig == signature;
  });
  for (int i = 0; i < confirmation_runs; ++i) {
    const std::optional<Signature> sig = fresh_crash(out.program, foreign);
    ++out.runs;
    out.crashes += sig && *sig == signature ? 1 : 0;
  }
  return out;
}

StandaloneConfirmation confirm_standalone(const std::string& script, ForeignEngine& foreign,
                                          int runs, const Signature* expected) {
  StandaloneConfirmation out;
  if (expected) out.signature = *expected;
  for (int i = 0; i < runs; ++i) {
    const std::optional<ForeignOutcome> o = foreign.run_standalone(script);
    if (!o) return out;  // the adapter cannot run one: nothing confirmed
    ++out.runs;
    const std::optional<Signature> sig = crash_signature(*o);
    if (i == 0 && !expected) out.signature = sig;
    out.crashes += sig && out.signature && *sig == *out.signature ? 1 : 0;
  }
  return out;
}

std::set<size_t> raising_statements(const Records& records) {
  std::set<size_t> out;
  for (const std::string& line : records.lines) {
    const std::vector<std::string> f = split(line, ' ');
    if (f.size() >= 2 && f[1] == "raise" && f[0].size() > 1 && f[0][0] == 's') {
      out.insert(std::stoul(f[0].substr(1)));
    }
  }
  return out;
}

StandaloneRepro find_standalone(const ConformanceProgram& program, const Signature& signature,
                                const std::set<size_t>& raising, ForeignEngine& foreign, int runs) {
  StandaloneRepro out;
  const std::pair<FunctionStyle, LeafValues> styles[] = {
      {FunctionStyle::kCompact, LeafValues::kRandom},
      {FunctionStyle::kCompact, LeafValues::kExact},
      {FunctionStyle::kFull, LeafValues::kExact},
  };
  std::string tried;
  for (const auto& [functions, leaves] : styles) {
    StandaloneOptions o;
    o.functions = functions;
    o.leaves = leaves;
    o.raising = raising;
    std::string script;
    try {
      script = render_standalone(program, o);
    } catch (const StandaloneError& e) {
      out.why_none = std::string("no standalone spelling: ") + e.what();
      return out;
    }
    const StandaloneConfirmation once = confirm_standalone(script, foreign, 1);
    if (once.runs == 0) {
      out.why_none = "the engine cannot run a standalone script";
      return out;
    }
    if (once.signature && *once.signature == signature) {
      out.script = script;
      out.confirmation = confirm_standalone(script, foreign, runs, &signature);
      return out;
    }
    tried += std::string(tried.empty() ? "" : "; ") +
             (once.signature ? once.signature->key() : "no crash");
  }
  out.why_none = "no style crashes with the signature (" + tried + ")";
  return out;
}

}  // namespace ag::proptests
