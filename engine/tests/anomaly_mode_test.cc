// Anomaly mode (Note [Anomaly mode], engine/anomaly_mode.h): errors in backward name the node and
// the forward call that recorded it; NaN gradients raise PyTorch's message at the node that made
// them, also where the formula would have added its value into a waiting sum.
#include "engine/anomaly_mode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "engine/autograd.h"
#include "engine/grad_mode.h"
#include "engine/options.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::error_of;
using testing::expect_error;
using testing::leaf;

TEST(AnomalyMode, ABackwardErrorNamesTheNodeAndItsForwardCall) {
  const Tensor x = leaf({1, 2}, {2});
  Tensor w = ops::mul(x, 1.0), y;
  {
    DetectAnomaly anomaly;
    y = ops::mul(w, w);
    {
      NoGradGuard no_grad;
      ops::add_(w, ops::ones_like(w));
    }
    const std::string what =
        error_of([&] { backward({ops::sum(y)}, BackwardArgs().retain_graph()); });
    // PyTorch's error, then the node and its forward call.
    EXPECT_NE(what.find("modified by an in-place operation"), std::string::npos) << what;
    EXPECT_NE(what.find("Error detected in 'mul'"), std::string::npos) << what;
    EXPECT_NE(what.find("The forward call that created it:"), std::string::npos) << what;
  }
  // Off: the same error, without the forward call.
  const std::string plain = error_of([&] { backward({ops::sum(y)}); });
  EXPECT_NE(plain.find("modified by an in-place operation"), std::string::npos);
  EXPECT_EQ(plain.find("Error detected"), std::string::npos) << plain;
  EXPECT_FALSE(anomaly_mode_enabled());
}

TEST(AnomalyMode, ANodeRecordedWithTheModeOffHasNoForwardCall) {
  const Tensor x = leaf({1, 2}, {2});
  Tensor w = ops::mul(x, 1.0);
  const Tensor y = ops::mul(w, w);
  {
    NoGradGuard no_grad;
    ops::add_(w, ops::ones_like(w));
  }
  DetectAnomaly anomaly;
  expect_error([&] { backward({ops::sum(y)}); },
               {"Error detected in 'mul'", "recorded while anomaly mode was off"});
}

TEST(AnomalyMode, ANanGradientRaisesAtTheNodeThatMadeIt) {
  const Tensor a = leaf({0}, {1}), b = leaf({0}, {1});
  DetectAnomaly anomaly;
  const Tensor y = ops::div(a, b);  // d/db = -a / b^2 = 0 / 0
  expect_error(
      [&] {
        grad({y}, {a, b}, GradArgs().retain_graph());
      },
      {"Function 'div' returned nan values in its 1th output."});
  // Without the NaN check, the NaN goes through.
  DetectAnomaly without_nan_check(/*check_nan=*/false);
  EXPECT_TRUE(std::isnan(grad({y}, {a, b})[1].item()));
}

TEST(AnomalyMode, ANanIsCaughtWhereTheFormulaWouldHaveAddedIntoAWaitingSum) {
  // tanh's gradient meets the add's at x: with fuse_gradient_sums, tanh's formula would add its
  // value into that waiting sum (Note [Sums fused into formulas]) and return nothing.
  const Tensor x = leaf({std::numeric_limits<double>::quiet_NaN(), 1.0}, {2});
  EngineOptions fused = current_options();
  fused.fuse_gradient_sums = true;
  OptionsGuard options(fused);
  DetectAnomaly anomaly;
  const Tensor loss = ops::sum(ops::add(ops::tanh(x), x));
  expect_error([&] { backward({loss}); },
               {"Function 'tanh' returned nan values in its 0th output."});
}

TEST(AnomalyMode, ScopesNestAndRestore) {
  EXPECT_FALSE(anomaly_mode_enabled());
  {
    DetectAnomaly outer;
    EXPECT_TRUE(anomaly_mode_checks_nan());
    {
      DetectAnomaly inner(false);
      EXPECT_TRUE(anomaly_mode_enabled());
      EXPECT_FALSE(anomaly_mode_checks_nan());
    }
    EXPECT_TRUE(anomaly_mode_checks_nan());
  }
  EXPECT_FALSE(anomaly_mode_enabled());
}

}  // namespace
}  // namespace ag
