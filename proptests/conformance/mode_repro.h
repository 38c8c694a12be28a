#pragma once

// A mode inconsistency's standalone script (Note [PyTorch against itself], mode_check.h): the mode
// program's body as a Python function in plain PyTorch, its leaves' values written out, the five
// modes run, and an assert that they agree (within the float64 tolerance of Note [Mode
// verdicts]). It needs only `pip install torch`.

#include <string>

#include "proptests/conformance/program.h"

namespace ag::proptests {

std::string mode_repro_script(const ConformanceProgram& modes);

}  // namespace ag::proptests
