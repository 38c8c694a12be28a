// Gradients of random compositions match central finite differences in float64: first order,
// and second order through create_graph (gradgradcheck), so every formula is differentiable.

#include "engine/gradcheck.h"
#include "ops/ops.h"
#include "proptests/ops/composition.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

// A scalar of the composition's output: sum(out * w) for fixed random weights w.
DifferentiableFn weighted_output(const Plan& plan) {
  return [&plan](const TensorList& leaves) {
    Tensor out = run(plan, leaves)[plan.output()];
    Tensor w = ops::uniform(out.shape(), -1, 1, /*seed=*/99, DType::kFloat64);
    return ops::sum(ops::mul(out, w));
  };
}

AG_PROPERTY(OpsGradients, FirstOrderMatchesFiniteDifferences) {
  const Plan plan = pick_plan();
  const GradcheckResult r = gradcheck(weighted_output(plan), make_leaves(plan, DType::kFloat64));
  if (!r.passed) RC_FAIL(r.report);
}

AG_PROPERTY(OpsGradients, SecondOrderMatchesFiniteDifferences) {
  const Plan plan = pick_plan();
  const GradcheckResult r =
      gradgradcheck(weighted_output(plan), make_leaves(plan, DType::kFloat64));
  if (!r.passed) RC_FAIL(r.report);
}

}  // namespace
}  // namespace ag::proptests
