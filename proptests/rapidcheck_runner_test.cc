// run_batch's `shrink` switch: a failing case is shrunk (calls of the property on smaller
// candidates after the failure) or reported as generated (RapidCheck runs the failing case once
// more to print it, and nothing else).
#include "proptests/rapidcheck_runner.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>

namespace ag::proptests {
namespace {

int calls = 0;

// Fails for every value above 5, so a batch of 100 cases at size 100 fails early.
void fails_above_five() {
  ++calls;
  const int x = *rc::gen::inRange(0, 1000);
  RC_ASSERT(x <= 5);
}

const NamedProperty kProperty{"RunnerTest.FailsAboveFive", &fails_above_five};

TEST(RunBatch, ShrinksAFailingCaseByDefault) {
  calls = 0;
  const BatchResult r = run_batch(kProperty, 7, 100, 100);
  ASSERT_FALSE(r.passed);
  EXPECT_GT(calls, r.cases + 2);  // the failing case and its report, then shrinking candidates
  EXPECT_NE(r.failure.find("6"), std::string::npos) << r.failure;  // shrunk to the least failure
}

TEST(RunBatch, NoShrinkReportsTheFailingCaseAsGenerated) {
  calls = 0;
  const BatchResult r = run_batch(kProperty, 7, 100, 100, /*shrink=*/false);
  ASSERT_FALSE(r.passed);
  EXPECT_EQ(calls, r.cases + 2);  // the passing cases, the failing one and its report
}

}  // namespace
}  // namespace ag::proptests
