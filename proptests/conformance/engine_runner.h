#pragma once

// Runs a conformance program on this engine, statement by statement, and returns its records
// (records.h). An ag::Error is a statement that raises; any other exception is recorded as a
// crash (which no expected record matches: the engine must only throw ag::Error).

#include "engine/tensor.h"
#include "proptests/conformance/program.h"
#include "proptests/conformance/records.h"

namespace ag::proptests {

// With `explain`, raise lines carry the error's message after " # " (for people; such records
// are not compared).
Records run_on_engine(const ConformanceProgram& program, bool explain = false);

// A kViewOp statement's views of `a` (one, or several for split, chunk and unbind), as the
// statement runs them; the generator also runs them on zeros for the results' shapes.
TensorList run_view_op(const Stmt& stmt, const Tensor& a);

}  // namespace ag::proptests
