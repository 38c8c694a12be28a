#pragma once

// Naive reference implementations of the op set's forwards: plain loops over doubles, written
// from PyTorch's definitions, sharing no code with the kernels (except the dropout mask's
// counter-based random numbers, which define which elements are dropped).

#include <vector>

#include "engine/tensor.h"
#include "proptests/ops/composition.h"

namespace ag::proptests {

struct RTensor {
  Shape shape;
  std::vector<double> v;  // row-major
};

RTensor to_reference(const Tensor& t);
// The value of `instr` applied to `args`, computed by loops.
RTensor reference(const Instr& instr, const std::vector<RTensor>& args);

}  // namespace ag::proptests
