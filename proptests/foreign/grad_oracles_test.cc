// Finite differences for disputed grad() results (Note [Independent answers for a grad()
// result]) and the verdicts they lead to (Note [Verdicts]), on planted values: no PyTorch.
#include "proptests/foreign/grad_oracles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "ops/ops.h"

namespace ag::proptests {
namespace {

const char* const kGrad =
    "v3 = grad outputs=v2 inputs=v0 grad_outputs=- retain_graph=- create_graph=0 "
    "allow_unused=0\n";

std::vector<double> leaf_values(const Shape& shape, uint64_t seed) {
  return ops::uniform(shape, -1.0, 1.0, seed, DType::kFloat64).to_vector();
}

// d sum(exp(x)) / dx = exp(x).
std::vector<double> exp_of_leaf() {
  std::vector<double> out;
  for (double x : leaf_values({3}, 7)) out.push_back(std::exp(x));
  return out;
}

ConformanceProgram program(const std::string& middle) {
  return parse_program("v0 = leaf [3] seed=7 requires_grad=1\n" + middle + kGrad);
}

TEST(GradOracles, FiniteDifferencesOfASmoothCone) {
  const ConformanceProgram p = program("v1 = exp v0\nv2 = sum v1\n");
  const FiniteDifferenceAnswer fd = grad_finite_differences(p, 3, 0);
  ASSERT_TRUE(fd.available);
  EXPECT_TRUE(fd.smooth);
  ASSERT_EQ(fd.values.size(), 3u);
  const std::vector<double> expected = exp_of_leaf();
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(fd.values[i], expected[i], 1e-7) << i;
}

TEST(GradOracles, WrongPyTorchValueWithAgreeingOraclesIsAPyTorchCandidate) {
  const ConformanceProgram p = program("v1 = exp v0\nv2 = sum v1\n");
  std::vector<double> wrong = exp_of_leaf();
  wrong[1] *= 1.01;
  const Verdict v = decide(grad_verdict_input(p, 3, 0, exp_of_leaf(), wrong));
  EXPECT_EQ(v.kind, VerdictKind::kPyTorchCandidate) << v.reason;
  EXPECT_TRUE(v.enters_findings());
}

TEST(GradOracles, PlantedEngineBugIsAnEngineCandidate) {
  const ConformanceProgram p = program("v1 = exp v0\nv2 = sum v1\n");
  std::vector<double> wrong = exp_of_leaf();
  wrong[0] = -wrong[0];
  const Verdict v = decide(grad_verdict_input(p, 3, 0, wrong, exp_of_leaf()));
  EXPECT_EQ(v.kind, VerdictKind::kEngineCandidate) << v.reason;
  EXPECT_FALSE(v.enters_findings());
}

TEST(GradOracles, KinkWithinTheStepIsUndecided) {
  // relu with a step of 2: every element's kink at 0 lies within it.
  const ConformanceProgram p = program("v1 = relu v0\nv2 = sum v1\n");
  const FiniteDifferenceAnswer fd = grad_finite_differences(p, 3, 0, 2.0);
  ASSERT_TRUE(fd.available);
  EXPECT_FALSE(fd.smooth);
  const Verdict v = decide(grad_verdict_input(p, 3, 0, {1, 0, 1}, {0, 0, 0}, 2.0));
  EXPECT_EQ(v.kind, VerdictKind::kUndecided);
  EXPECT_EQ(v.reason, "a kink within the finite-difference step");
}

TEST(GradOracles, NanIsUndecided) {
  // log of values in [-1, 1): NaN where the leaf is negative.
  const ConformanceProgram p = program("v1 = log v0\nv2 = sum v1\n");
  const Verdict v = decide(grad_verdict_input(p, 3, 0, {1, 2, 3}, {1, 2, 4}));
  EXPECT_EQ(v.kind, VerdictKind::kUndecided);
  EXPECT_EQ(v.reason, "a NaN appears");
}

TEST(GradOracles, RandomOpIsUndecided) {
  const ConformanceProgram p = program("v1 = dropout v0 p=0.5 seed=3\nv2 = sum v1\n");
  EXPECT_TRUE(depends_on_random_op(p, 3));
  EXPECT_FALSE(depends_on_random_op(program("v1 = dropout v0 p=0 seed=3\nv2 = sum v1\n"), 3));
  const Verdict v = decide(grad_verdict_input(p, 3, 0, {1, 2, 3}, {1, 2, 4}));
  EXPECT_EQ(v.kind, VerdictKind::kUndecided);
  EXPECT_EQ(v.reason, "the program has a random op");
}

TEST(GradOracles, NoAnswerOutsideAPureOpCone) {
  // A view in the cone, an in-place write before the grad, a non-grad statement.
  EXPECT_FALSE(grad_finite_differences(program("v1 = view v0 [3]\nv2 = sum v1\n"), 3, 0).available);
  EXPECT_FALSE(
      grad_finite_differences(program("v1 = exp v0\nmul_ v1 v1 no_grad=1\nv2 = sum v1\n"), 4, 0)
          .available);
  EXPECT_FALSE(grad_finite_differences(program("v1 = exp v0\nv2 = sum v1\n"), 1, 0).available);
  const Verdict v = decide(
      grad_verdict_input(program("v1 = view v0 [3]\nv2 = sum v1\n"), 3, 0, {1, 1, 1}, {1, 1, 2}));
  EXPECT_EQ(v.reason, "no independent answer");
}

TEST(GradOracles, GradOutputsWeighTheOutputs) {
  // d <g, exp(x)> / dx = g * exp(x), g a leaf of its own.
  const ConformanceProgram p = parse_program(
      "v0 = leaf [3] seed=7 requires_grad=1\n"
      "v1 = leaf [3] seed=8 requires_grad=0\n"
      "v2 = exp v0\n"
      "v3 = grad outputs=v2 inputs=v0 grad_outputs=v1 retain_graph=- create_graph=0 "
      "allow_unused=0\n");
  const FiniteDifferenceAnswer fd = grad_finite_differences(p, 3, 0);
  ASSERT_TRUE(fd.available);
  const std::vector<double> x = leaf_values({3}, 7), g = leaf_values({3}, 8);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(fd.values[i], g[i] * std::exp(x[i]), 1e-7) << i;
}

std::string value_line(const std::vector<double>& values) {
  std::string s = "s3 v3 [3] rg=0 leaf=1 =";
  char buf[64];
  for (double x : values) {
    std::snprintf(buf, sizeof(buf), " %.17g", x);
    s += buf;
  }
  return s;
}

// A mismatch of records as the comparison reports it: PyTorch's line, then ours.
TEST(GradOracles, VerdictOnARecordedMismatch) {
  const ConformanceProgram p = program("v1 = exp v0\nv2 = sum v1\n");
  std::vector<double> wrong = exp_of_leaf();
  wrong[2] += 0.5;
  Mismatch m;
  m.expected = value_line(wrong);
  m.actual = value_line(exp_of_leaf());
  const std::optional<Verdict> v = grad_value_verdict(p, m);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, VerdictKind::kPyTorchCandidate) << v->reason;
  std::swap(m.expected, m.actual);
  EXPECT_EQ(grad_value_verdict(p, m)->kind, VerdictKind::kEngineCandidate);
  // Not a value line of a grad() result: no verdict.
  m.expected = "s3 raise version";
  EXPECT_FALSE(grad_value_verdict(p, m));
  m.expected = m.actual = "s1 v1 [3] rg=1 leaf=0 = 1 2 3";
  EXPECT_FALSE(grad_value_verdict(p, m));
}

}  // namespace
}  // namespace ag::proptests
