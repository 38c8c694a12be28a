// Batched tangents (Note [Batched tangents], engine/forward_ad.h) on random compositions of the
// op set in float64: jacfwd's one batched level equals the column-by-column jacfwd and the
// row-by-row jacrev to rounding, and so does jacrev's one vjp with batched cotangents (Note
// [Batched cotangents], engine/functional.h), whichever ops take a batching rule and whichever run
// row by row (Note [Batching rules], ops/batched_jvp.h).

#include <cmath>
#include <sstream>

#include "engine/functional.h"
#include "ops/ops.h"
#include "proptests/ops/composition.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

AG_PROPERTY(BatchedJacobians, BatchedJacfwdAndJacrevEqualColumnsAndRows) {
  const Plan plan = pick_plan();
  const TensorList leaves = make_leaves(plan, DType::kFloat64);
  std::vector<size_t> inputs;  // the leaves that require grad: the Jacobian's inputs
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (plan.leaf_requires_grad[i]) inputs.push_back(i);
  }
  TensorList primals;
  for (size_t i : inputs) primals.push_back(leaves[i].detach());
  const func::Function f = [&](const TensorList& xs) {
    TensorList all = leaves;
    for (size_t k = 0; k < inputs.size(); ++k) all[inputs[k]] = xs[k];
    return TensorList{run(plan, all)[plan.output()]};
  };
  const std::vector<TensorList> batched = func::jacfwd(f, primals);
  const std::vector<TensorList> columns = func::jacfwd_by_columns(f, primals);
  // jacrev needs an output that depends on some input (grad() refuses one that does not).
  const bool reached = run(plan, leaves)[plan.output()].requires_grad();
  const std::vector<TensorList> rows = reached ? func::jacrev_by_rows(f, primals) : columns;
  const std::vector<TensorList> batched_rows = reached ? func::jacrev(f, primals) : columns;
  for (size_t k = 0; k < primals.size(); ++k) {
    RC_ASSERT(batched[0][k].shape() == columns[0][k].shape());
    RC_ASSERT(batched_rows[0][k].shape() == columns[0][k].shape());
    const std::vector<double> b = batched[0][k].to_vector(), c = columns[0][k].to_vector(),
                              r = rows[0][k].to_vector(), br = batched_rows[0][k].to_vector();
    for (size_t e = 0; e < b.size(); ++e) {
      for (const double other : {c[e], r[e], br[e]}) {
        if (!std::isfinite(b[e]) && !std::isfinite(other)) continue;
        if (std::abs(b[e] - other) > 1e-9 * (1 + std::abs(other))) {
          std::ostringstream os;
          os << "input " << k << " element " << e << ": batched jacfwd " << b[e] << ", columns "
             << c[e] << ", jacrev by rows " << r[e] << ", batched jacrev " << br[e] << "\n"
             << describe(plan);
          RC_FAIL(os.str());
        }
      }
    }
  }
}

// hessian's one batched forward-over-reverse level equals one hvp per element, for the weighted
// sum of the program's output in its first input that requires grad.
AG_PROPERTY(BatchedJacobians, BatchedHessianEqualsColumns) {
  const Plan plan = pick_plan();
  const TensorList leaves = make_leaves(plan, DType::kFloat64);
  size_t input = 0;
  while (input < leaves.size() && !plan.leaf_requires_grad[input]) ++input;
  if (input == leaves.size()) return;
  const Tensor w = ops::uniform(plan.shapes[plan.output()], -1, 1, plan.seed + 5, DType::kFloat64);
  const func::Function f = [&](const TensorList& xs) {
    TensorList all = leaves;
    all[input] = xs[0];
    return TensorList{ops::sum(ops::mul(run(plan, all)[plan.output()], w))};
  };
  const Tensor x = leaves[input].detach();
  // hvp needs a gradient: an output that depends on x.
  if (!ops::sum(ops::mul(run(plan, leaves)[plan.output()], w)).requires_grad()) return;
  const std::vector<double> b = func::hessian(f, x).to_vector();
  const std::vector<double> c = func::hessian_by_columns(f, x).to_vector();
  RC_ASSERT(b.size() == c.size());
  for (size_t e = 0; e < b.size(); ++e) {
    if (!std::isfinite(b[e]) && !std::isfinite(c[e])) continue;
    if (std::abs(b[e] - c[e]) > 1e-9 * (1 + std::abs(c[e]))) {
      std::ostringstream os;
      os << "element " << e << ": batched hessian " << b[e] << ", columns " << c[e] << "\n"
         << describe(plan);
      RC_FAIL(os.str());
    }
  }
}

}  // namespace
}  // namespace ag::proptests
