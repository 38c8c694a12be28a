// The rule on PyTorch's modes (Note [Mode verdicts]), on recorded answers: a planted disagreement
// is an inconsistency, agreeing modes are not, a NaN, a kink or a random op is undecided.
#include "proptests/foreign/mode_verdict.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ag::proptests {
namespace {

// f(x) = x * x at x = [3, -1] with cotangent [1, 1] and tangent [1, 2]: value [9, 1], gradient
// [6, -2], <c, J t> = 6 - 4 = 2, as every mode and the engine give it.
ModeCheckInput agreeing() {
  ModeCheckInput in;
  in.quantities = {
      {"value",
       {{"torch.func.vjp", {9, 1}},
        {"torch.autograd.grad", {9, 1}},
        {"torch.compile(aot_eager)", {9, 1 + 1e-15}},
        {"torch.func.jvp", {9, 1}},
        {"forward_ad", {9, 1}}},
       {true, {9, 1}}},
      {"grad v0",
       {{"torch.func.vjp", {6, -2}},
        {"torch.autograd.grad", {6, -2}},
        {"torch.compile(aot_eager)", {6, -2}}},
       {true, {6, -2}}},
      {"<c, J t>",
       {{"torch.func.vjp", {2}},
        {"torch.autograd.grad", {2}},
        {"torch.compile(aot_eager)", {2}},
        {"torch.func.jvp", {2 + 1e-14}},
        {"forward_ad", {2}}},
       {true, {2}},
       10},
  };
  return in;
}

const Closeness kFloat64 = mode_tolerance(false);

TEST(ModeVerdict, AgreeingModesAreConsistent) {
  const ModeVerdict v = decide_modes(agreeing(), kFloat64);
  EXPECT_EQ(v.kind, ModeVerdictKind::kConsistent) << v.reason;
  EXPECT_FALSE(v.enters_findings());
  EXPECT_EQ(v.reason, "3 quantities agree in every mode");
}

TEST(ModeVerdict, APlantedForwardModeErrorIsAnInconsistency) {
  // F5's shape: forward_ad's tangent twice the others'.
  ModeCheckInput in = agreeing();
  in.quantities[2].answers[4].values = {4};
  const ModeVerdict v = decide_modes(in, kFloat64);
  ASSERT_EQ(v.kind, ModeVerdictKind::kInconsistent) << v.reason;
  EXPECT_TRUE(v.enters_findings());
  EXPECT_EQ(v.quantity, "<c, J t>");
  EXPECT_EQ(v.disagreeing, std::vector<std::string>{"forward_ad"});
  EXPECT_EQ(v.agreeing.size(), 4u);
  EXPECT_EQ(v.agree_with_engine.size(), 4u);  // the engine sides with the four
  EXPECT_EQ(v.reason,
            "<c, J t>: torch.func.vjp, torch.autograd.grad, torch.compile(aot_eager), "
            "torch.func.jvp against forward_ad; the engine agrees with torch.func.vjp, "
            "torch.autograd.grad, torch.compile(aot_eager), torch.func.jvp");
}

TEST(ModeVerdict, ACompiledGradientOffInTheSeventhDigitIsAnInconsistency) {
  ModeCheckInput in = agreeing();
  in.quantities[1].answers[2].values = {6 * (1 + 1e-7), -2};
  const ModeVerdict v = decide_modes(in, kFloat64);
  ASSERT_EQ(v.kind, ModeVerdictKind::kInconsistent) << v.reason;
  EXPECT_EQ(v.quantity, "grad v0");
  EXPECT_EQ(v.disagreeing, std::vector<std::string>{"torch.compile(aot_eager)"});
}

TEST(ModeVerdict, FloatThirtyTwoToleranceAcceptsWhatFloatSixtyFourDoesNot) {
  ModeCheckInput in = agreeing();
  in.quantities[1].answers[2].values = {6 * (1 + 1e-6), -2};
  EXPECT_EQ(decide_modes(in, kFloat64).kind, ModeVerdictKind::kInconsistent);
  EXPECT_EQ(decide_modes(in, mode_tolerance(true)).kind, ModeVerdictKind::kConsistent);
}

TEST(ModeVerdict, TheScaleWidensTheAbsoluteToleranceOfASumThatCancels) {
  // <c, J t> = 0 from terms of magnitude 10: each mode's rounding of the terms remains.
  ModeCheckInput in = agreeing();
  for (ModeAnswer& a : in.quantities[2].answers) a.values = {0};
  in.quantities[2].engine.values = {0};
  in.quantities[2].answers[3].values = {5e-12};
  EXPECT_EQ(decide_modes(in, kFloat64).kind, ModeVerdictKind::kConsistent);
  in.quantities[2].scale = 1;
  EXPECT_EQ(decide_modes(in, kFloat64).kind, ModeVerdictKind::kInconsistent);
}

TEST(ModeVerdict, ADisagreementAtAKinkIsUndecided) {
  ModeCheckInput in = agreeing();
  in.quantities[1].answers[1].values = {0, -2};  // e.g. relu's subgradient choice at 0
  in.smooth = false;
  const ModeVerdict v = decide_modes(in, kFloat64);
  EXPECT_EQ(v.kind, ModeVerdictKind::kUndecided);
  EXPECT_EQ(v.reason, "the modes disagree on grad v0 at a kink");
}

TEST(ModeVerdict, AKinkWithAgreeingModesIsStillConsistent) {
  ModeCheckInput in = agreeing();
  in.smooth = false;
  EXPECT_EQ(decide_modes(in, kFloat64).kind, ModeVerdictKind::kConsistent);
}

TEST(ModeVerdict, ANaNInAnyAnswerIsUndecided) {
  ModeCheckInput in = agreeing();
  in.quantities[1].answers[0].values = {std::nan(""), -2};
  in.quantities[1].answers[1].values = {1, -2};  // a planted disagreement does not count
  ModeVerdict v = decide_modes(in, kFloat64);
  EXPECT_EQ(v.kind, ModeVerdictKind::kUndecided);
  EXPECT_EQ(v.reason, "a NaN or an infinity in grad v0");
  in = agreeing();
  in.quantities[0].engine.values = {std::numeric_limits<double>::infinity(), 1};
  EXPECT_EQ(decide_modes(in, kFloat64).kind, ModeVerdictKind::kUndecided);
}

TEST(ModeVerdict, ARandomOpIsUndecided) {
  ModeCheckInput in = agreeing();
  in.quantities[1].answers[1].values = {1, -2};
  in.has_random_op = true;
  EXPECT_EQ(decide_modes(in, kFloat64).kind, ModeVerdictKind::kUndecided);
}

TEST(ModeVerdict, AnInconsistencyWithoutTheEngineSaysSo) {
  ModeCheckInput in = agreeing();
  in.quantities[0].answers[1].values = {9, 2};
  in.quantities[0].engine.available = false;
  const ModeVerdict v = decide_modes(in, kFloat64);
  ASSERT_EQ(v.kind, ModeVerdictKind::kInconsistent);
  EXPECT_TRUE(v.agree_with_engine.empty());
  EXPECT_EQ(v.reason,
            "value: torch.func.vjp, torch.compile(aot_eager), torch.func.jvp, "
            "forward_ad against torch.autograd.grad; no engine answer");
}

TEST(ModeVerdict, OneModeAloneDecidesNothing) {
  ModeCheckInput in;
  in.quantities = {{"value", {{"torch.func.vjp", {1}}}, {true, {2}}}};
  EXPECT_EQ(decide_modes(in, kFloat64).kind, ModeVerdictKind::kUndecided);
}

TEST(ModeVerdict, ElementCountsThatDifferDisagree) {
  ModeCheckInput in = agreeing();
  in.quantities[1].answers[2].values = {6};
  EXPECT_EQ(decide_modes(in, kFloat64).kind, ModeVerdictKind::kInconsistent);
}

}  // namespace
}  // namespace ag::proptests
