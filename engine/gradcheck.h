#pragma once

#include <functional>
#include <string>

#include "engine/tensor.h"

namespace ag {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  // Also checks forward mode (Note [Forward mode], engine/forward_ad.h) as PyTorch's
  // check_forward_ad with fast_mode: the tangent J u of one random direction u from a dual level
  // against the finite-difference Jacobian times u, and against the reverse-mode Jacobian times u.
  bool check_forward_ad = false;
};

struct GradcheckResult {
  bool passed = true;
  double max_abs_error = 0;
  std::string report;  // on failure: which input, which element, analytical vs numerical
};

using DifferentiableFn = std::function<Tensor(const TensorList&)>;

// Compares the Jacobian from grad() with central finite differences, for every element of every
// output and input. Inputs must be float64 leaves (requires_grad on the ones to check).
GradcheckResult gradcheck(const DifferentiableFn& fn, const TensorList& inputs,
                          const GradcheckOptions& options = {});

// Checks second derivatives: gradcheck of x -> <grad(fn(x), x, v, create_graph=true), w> for
// fixed random v and w.
GradcheckResult gradgradcheck(const DifferentiableFn& fn, const TensorList& inputs,
                              const GradcheckOptions& options = {});

}  // namespace ag
