#pragma once

// A transform statement on this engine: ag::func's jvp, vjp, jacrev, jacfwd, hessian and hvp of
// the statement's body (Note [Conformance forward mode], program.h).

#include "engine/tensor.h"
#include "proptests/conformance/program.h"

namespace ag::proptests {

// The statement's results (num_results(s.transform, s.num_primals) tensors) for its arguments'
// values `args` (s.args'); throws ag::Error where a transform or an op of the body raises.
TensorList run_transform(const Stmt& s, const TensorList& args);

}  // namespace ag::proptests
