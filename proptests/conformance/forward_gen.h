#pragma once

// Forward-mode programs for the conformance corpus (Note [Conformance forward mode], program.h):
// a generated program (program_gen.h) run inside a dual level, its leaves (and sometimes an
// interior value) made dual with tangent leaves of their shape, later statements reading the
// duals, unpack_dual of values along the way; some with the errors PyTorch raises (make_dual
// outside a level, a tangent of another shape), some exiting the level early; and transform
// statements (jvp, vjp, jacrev, jacfwd, hessian, hvp of a short body of pure ops) after it. Only
// where asked for: corpus/forward.txt and `export --forward`.

#include <cstdint>

#include "proptests/conformance/program.h"
#include "proptests/conformance/records.h"

namespace ag::proptests {

// Forward program `id` of a corpus drawn from `seed`: generate_program(seed, id) with the
// statements above, deterministic in both.
ConformanceProgram generate_forward_program(uint64_t seed, int id);

// The tangents `records` hold for `program`: unpack_dual's tangents that are not none, and
// transforms' results (corpus counts).
int tangents_recorded(const ConformanceProgram& program, const Records& records);

}  // namespace ag::proptests
