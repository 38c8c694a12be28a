// Seed 001 (PR 82544): y = linear(x, W, b)^2 differentiated twice with respect to x only. The
// weight-gradient matmul is never needed, so with the per-call view it never runs.
#include <gtest/gtest.h>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "ops/ops.h"

namespace ag {
namespace {

struct Result {
  Tensor y_x, y_xx;
  int64_t weight_matmuls = 0;  // formulas that produce a gradient for W
  int64_t formulas = 0;
};

Result run(const EngineOptions& options) {
  OptionsGuard guard(options);
  Tensor x = ops::uniform({8, 5}, -1, 1, 1, DType::kFloat64);
  Tensor w = ops::uniform({4, 5}, -1, 1, 2, DType::kFloat64);
  Tensor b = ops::uniform({4}, -1, 1, 3, DType::kFloat64);
  for (Tensor* t : {&x, &w, &b}) t->set_requires_grad(true);
  Tensor y = ops::sum(ops::pow(ops::linear(x, w, b), 2.0));
  reset_counters();
  Result r;
  r.y_x = grad({y}, {x}, GradArgs().create_graph().engine_options(options))[0];
  r.y_xx = grad({ops::sum(r.y_x)}, {x}, GradArgs().create_graph().engine_options(options))[0];
  // linear's weight formula, and mm's second-operand formula (the weight side of y_x = G @ W).
  r.weight_matmuls =
      counters().formula_count("linear:weight") + counters().formula_count("mm:mat2");
  r.formulas = counters().formulas_evaluated;
  return r;
}

TEST(LinearPow, WeightGradientMatmulIsNeverEvaluated) {
  Result on = run(EngineOptions{});
  EXPECT_EQ(on.weight_matmuls, 0);
  Result off = run(EngineOptions::all_off());
  EXPECT_GT(off.weight_matmuls, 0);
  EXPECT_LT(on.formulas, off.formulas);
  EXPECT_EQ(on.y_x.to_vector(), off.y_x.to_vector());
  EXPECT_EQ(on.y_xx.to_vector(), off.y_xx.to_vector());
}

}  // namespace
}  // namespace ag
