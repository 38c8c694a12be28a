#pragma once

// Note [Generator coverage]
// Every random generator of the test tree (random_graph, proptests/ops' compositions, the
// conformance programs, the API model, the JIT's random programs and random IR graphs) states,
// for every op of the op list (ops/op_list.h), how it covers it: a function such as
//
//   Coverage composition_coverage(ops::OpId op) { switch (op) { case ...: ... } }
//
// with one case per op and no default, returning either covered("by which entry") or
// excluded("why not"). With -Wall -Werror (.bazelrc) an op added to the list without a case is a
// compile error in each generator, so no generator silently lacks a new op. (The conformance
// programs add their statements' ops and defer the rest to composition_coverage's cases.)
// Tests then check each table against what its generator really makes: every covered op is
// made and no excluded one (proptests/ops/coverage_test, conformance_test,
// random_graph_coverage_test, jit/random_program_coverage_test, jit/random_ir_graph_coverage_test;
// random_graph's and the JIT programs' tests watch the ops run through the tracing hook,
// proptests/recorded_ops.h). The API model's commands are drawn inside its RapidCheck property,
// so its table has only the compile-time check.

#include "ops/op_list.h"

namespace ag::proptests {

struct Coverage {
  bool covered = false;
  const char* note = "";  // covered: by what; excluded: why not
};

constexpr Coverage covered(const char* by) { return {true, by}; }
constexpr Coverage excluded(const char* why) { return {false, why}; }

}  // namespace ag::proptests
