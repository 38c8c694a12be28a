// The verdict on a value disagreement (Note [Verdicts]), on recorded answers: each rule, and the
// tolerances on both sides.
#include "proptests/foreign/verdict.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ag::proptests {
namespace {

// d/dx of x^3 at x = 0.5 and 2: 0.75 and 12, as every independent answer gives it.
const std::vector<double> kTrue = {0.75, 12.0};

VerdictInput answers(std::vector<double> ours, std::vector<double> pytorch) {
  VerdictInput in;
  in.ours = std::move(ours);
  in.pytorch = std::move(pytorch);
  in.dual = {true, kTrue};
  in.finite_differences = {true, {0.75 + 2e-9, 12.0 - 3e-8}, true};
  return in;
}

TEST(Verdict, WrongPyTorchValueWithAgreeingOraclesIsAPyTorchCandidate) {
  const Verdict v = decide(answers(kTrue, {0.75, 11.5}));
  EXPECT_EQ(v.kind, VerdictKind::kPyTorchCandidate) << v.reason;
  EXPECT_TRUE(v.enters_findings());
  EXPECT_EQ(v.reason, "ours agrees with dual numbers, finite differences; pytorch does not");
}

TEST(Verdict, PlantedEngineBugIsAnEngineCandidate) {
  const Verdict v = decide(answers({0.75, 12.5}, kTrue));
  EXPECT_EQ(v.kind, VerdictKind::kEngineCandidate) << v.reason;
  EXPECT_FALSE(v.enters_findings());
}

TEST(Verdict, AKinkIsUndecided) {
  VerdictInput in = answers(kTrue, {0.75, 11.5});
  in.finite_differences.smooth = false;  // e.g. relu at 0 within the step
  const Verdict v = decide(in);
  EXPECT_EQ(v.kind, VerdictKind::kUndecided);
  EXPECT_EQ(v.reason, "a kink within the finite-difference step");
}

TEST(Verdict, ANaNIsUndecided) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  VerdictInput in = answers(kTrue, {0.75, nan});
  EXPECT_EQ(decide(in).kind, VerdictKind::kUndecided);
  EXPECT_EQ(decide(in).reason, "a NaN appears");
  in = answers(kTrue, {0.75, 11.5});
  in.nan_appears = true;  // elsewhere in the program
  EXPECT_EQ(decide(in).reason, "a NaN appears");
  in = answers(kTrue, {0.75, 11.5});
  in.finite_differences.values[0] = nan;
  EXPECT_EQ(decide(in).reason, "a NaN appears");
}

TEST(Verdict, ARandomOpIsUndecided) {
  VerdictInput in = answers(kTrue, {0.75, 11.5});
  in.has_random_op = true;
  EXPECT_EQ(decide(in).kind, VerdictKind::kUndecided);
  EXPECT_EQ(decide(in).reason, "the program has a random op");
}

TEST(Verdict, WithoutAnIndependentAnswerOrWhenTheyDisagreeIsUndecided) {
  VerdictInput in = answers(kTrue, {0.75, 11.5});
  in.dual.available = false;
  in.finite_differences.available = false;
  EXPECT_EQ(decide(in).reason, "no independent answer");
  in = answers(kTrue, {0.75, 11.5});
  in.dual.values = {0.75, 12.001};
  EXPECT_EQ(decide(in).reason, "dual numbers and finite differences disagree");
}

TEST(Verdict, ForwardModeCountsWhenAvailable) {
  VerdictInput in = answers(kTrue, {0.75, 11.5});
  in.forward_mode = {true, kTrue};
  EXPECT_EQ(decide(in).kind, VerdictKind::kPyTorchCandidate);
  in.forward_mode = {true, {0.75, 11.5}};  // forward mode sides with PyTorch: oracles disagree
  EXPECT_EQ(decide(in).kind, VerdictKind::kUndecided);
}

TEST(Verdict, OnlyFiniteDifferencesDecideOutsideTheirTolerance) {
  VerdictInput in = answers(kTrue, {0.75, 12.0 + 1e-9});
  in.dual.available = false;
  // 1e-9 apart: beyond the comparison tolerance, within the finite differences': both agree.
  EXPECT_EQ(decide(in).kind, VerdictKind::kUndecided);
  EXPECT_EQ(decide(in).reason, "both within the tolerance of finite differences");
  in.pytorch = {0.75, 12.01};
  EXPECT_EQ(decide(in).kind, VerdictKind::kPyTorchCandidate);
}

TEST(Verdict, NeitherAgreeingIsUndecided) {
  const Verdict v = decide(answers({0.75, 12.5}, {0.75, 11.5}));
  EXPECT_EQ(v.kind, VerdictKind::kUndecided);
  EXPECT_EQ(v.reason, "neither agrees with every answer of dual numbers, finite differences");
}

// The comparison's tolerance: |x - y| <= 1e-14 + 1e-12 * max(|x|, |y|). For 12: 1.2014e-11.
TEST(Verdict, ComparisonToleranceOnBothSides) {
  VerdictInput in = answers(kTrue, {0.75, 12.0 + 1.1e-11});
  EXPECT_EQ(decide(in).reason, "ours and pytorch agree within the comparison tolerance");
  in.pytorch = {0.75, 12.0 + 1.3e-11};
  // Beyond the comparison's, within the dual numbers' (1e-12 + 1e-9 * 12): both agree.
  EXPECT_EQ(decide(in).kind, VerdictKind::kUndecided);
  EXPECT_EQ(decide(in).reason, "both within the tolerance of dual numbers, finite differences");
}

// The exact answers' tolerance: 1e-12 + 1e-9 * 12 = 1.2001e-8 at 12. Finite differences off: the
// dual numbers decide alone.
TEST(Verdict, ExactToleranceOnBothSides) {
  VerdictInput in = answers(kTrue, {0.75, 12.0 + 1.1e-8});
  in.finite_differences.available = false;
  EXPECT_EQ(decide(in).kind, VerdictKind::kUndecided);  // just within: PyTorch agrees too
  in.pytorch = {0.75, 12.0 + 1.3e-8};
  EXPECT_EQ(decide(in).kind, VerdictKind::kPyTorchCandidate);  // just beyond
  // The engine side, mirrored.
  in.pytorch = kTrue;
  in.ours = {0.75, 12.0 + 1.3e-8};
  EXPECT_EQ(decide(in).kind, VerdictKind::kEngineCandidate);
  in.ours = {0.75, 12.0 + 1.1e-8};
  EXPECT_EQ(decide(in).kind, VerdictKind::kUndecided);
}

// The finite differences' tolerance: 1e-6 + 1e-5 * 12 = 1.21e-4 at 12 (their values are the true
// ones here).
TEST(Verdict, FiniteDifferenceToleranceOnBothSides) {
  VerdictInput in = answers(kTrue, {0.75, 12.0 + 1.2e-4});
  in.dual.available = false;
  in.finite_differences.values = kTrue;
  EXPECT_EQ(decide(in).kind, VerdictKind::kUndecided);
  in.pytorch = {0.75, 12.0 + 1.22e-4};
  EXPECT_EQ(decide(in).kind, VerdictKind::kPyTorchCandidate);
}

TEST(Verdict, ShapesThatDifferDisagree) {
  const Verdict v = decide(answers(kTrue, {0.75}));
  EXPECT_EQ(v.kind, VerdictKind::kPyTorchCandidate) << v.reason;
  EXPECT_FALSE((Closeness{1, 1}.agree(std::vector<double>{1}, std::vector<double>{1, 1})));
  EXPECT_TRUE((Closeness{}.agree(INFINITY, INFINITY)));
  EXPECT_FALSE((Closeness{1, 1}.agree(INFINITY, -INFINITY)));
}

}  // namespace
}  // namespace ag::proptests
