#pragma once

// Hook statements for conformance programs (Note [Conformance hooks], program.h): tensor hooks
// that log or scale, node pre- and post-hooks, post-accumulate-grad hooks, removals (sometimes
// twice) and retain_grad(), each inserted at a random place of a generated program on a value
// made before it (a leaf, an interior tensor, a view). Only where asked for: the committed
// programs_*.txt are generated without them, corpus/hooks.txt and `fuzz --against --hooks` with.

#include <rapidcheck.h>

#include <vector>

#include "proptests/conformance/program.h"

namespace ag::proptests {

struct HookMove {
  int at = 0;     // inserted before statement `at` (modulo the number of statements + 1)
  int kind = 0;   // which statement (a weighted table in hook_gen.cc)
  int a = 0;      // the value (modulo those made before), or the hook removed
  int param = 0;  // variant bits: a tensor hook's factor, removing twice
};

rc::Gen<std::vector<HookMove>> hook_moves_gen();

// Inserts the moves' statements into `program`, in order; a move with nothing to act on is
// dropped.
void add_hooks(ConformanceProgram& program, const std::vector<HookMove>& moves);

// The name of a move's statement, for coverage counts (fuzz_stats).
const char* hook_move_name(const HookMove& move);

}  // namespace ag::proptests
