// The bug classes of recorded conformance programs (Note [Bug classes]), and the campaign's
// coverage counts over them.
#include "proptests/foreign/bug_class.h"

#include <gtest/gtest.h>

namespace ag::proptests {
namespace {

std::vector<BugClass> classes_of(const std::string& text) {
  return bug_classes(parse_program(text));
}

TEST(BugClass, PlainProgramHasNone) {
  EXPECT_EQ(classes_of("v0 = leaf [2] seed=1 requires_grad=1\n"
                       "v1 = mul v0 v0\n"
                       "backward tensors=v1 inputs=- grad_tensors=v0 retain_graph=- "
                       "create_graph=0 ; grads v0\n"),
            std::vector<BugClass>{});
}

TEST(BugClass, WriteThroughAViewOfASavedValue) {
  // v1 is read by mul (which saves it), then written through its view v3; backward after.
  EXPECT_EQ(classes_of("v0 = leaf [2,3] seed=17 requires_grad=1\n"
                       "v1 = mul v0 v0\n"
                       "v2 = mul v1 v1\n"
                       "v3 = view v1 [6]\n"
                       "add_ v3 v3 no_grad=0\n"
                       "backward tensors=v2 inputs=v0 grad_tensors=v2 retain_graph=- "
                       "create_graph=0\n"),
            (std::vector<BugClass>{BugClass::kViewsInplace, BugClass::kVersionCounter,
                                   BugClass::kBackwardInputs}));
}

TEST(BugClass, WriteToAnUnaliasedValueWithoutAGradAfterIt) {
  // Not a view (no other value shares v1's storage), and no grad()/backward() after the write.
  EXPECT_EQ(classes_of("v0 = leaf [2] seed=1 requires_grad=1\n"
                       "v1 = mul v0 v0\n"
                       "v2 = mul v1 v1\n"
                       "mul_ v1 v0 no_grad=0\n"),
            std::vector<BugClass>{});
}

TEST(BugClass, DetachSharesStorage) {
  // The write goes to v2, a detach of v1 that nothing read: views x in-place, and the version
  // counter through v1 (read by mul) with grad() after the write.
  EXPECT_EQ(classes_of("v0 = leaf [2] seed=1 requires_grad=1\n"
                       "v1 = mul v0 v0\n"
                       "v2 = detach v1\n"
                       "v3 = mul v1 v1\n"
                       "copy_ v2 v0 no_grad=1\n"
                       "v4 = grad outputs=v3 inputs=v0 grad_outputs=v3 retain_graph=- "
                       "create_graph=1 allow_unused=0\n"),
            (std::vector<BugClass>{BugClass::kViewsInplace, BugClass::kVersionCounter,
                                   BugClass::kHigherOrder}));
}

TEST(BugClass, CustomFunctionsAndGradState) {
  EXPECT_EQ(classes_of("v0 = leaf [2] seed=1 requires_grad=1\n"
                       "v1 v2 = custom Two v0 v0\n"
                       "v3 = grad_of v0\n"
                       "set_grad v0 v1\n"),
            (std::vector<BugClass>{BugClass::kCustomFunction, BugClass::kGradState}));
}

TEST(BugClass, CoverageCountsEveryClassOfEveryProgram) {
  BugClassCoverage coverage;
  coverage.add(parse_program("v0 = leaf [2] seed=1 requires_grad=1\nv1 v2 = custom Two v0 v0\n"));
  coverage.add(
      parse_program("v0 = leaf [2] seed=1 requires_grad=1\nv1 = custom Mul v0 v0\n"
                    "v2 = grad_of v0\n"));
  coverage.add(parse_program("v0 = leaf [2] seed=1 requires_grad=1\n"));
  EXPECT_EQ(coverage.programs(), 3);
  EXPECT_EQ(coverage.count(BugClass::kCustomFunction), 2);
  EXPECT_EQ(coverage.count(BugClass::kGradState), 1);
  EXPECT_EQ(coverage.count(BugClass::kViewsInplace), 0);
  const std::string report = coverage.report();
  EXPECT_NE(report.find("of 3:"), std::string::npos) << report;
  EXPECT_NE(report.find("custom Function                 2\n"), std::string::npos) << report;
  EXPECT_NE(report.find("hooks                           0  (only with --hooks)\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("mode inconsistency              0  (only with --modes)\n"),
            std::string::npos)
      << report;
}

// The mode check's program (proptests/conformance/mode_check.h) for a generated one: counted in
// "mode inconsistency", not as a program of its own.
TEST(BugClass, AModeCheckCountsItsClassNotAProgram) {
  const ConformanceProgram modes = parse_program(
      "v0 = leaf [2] seed=1 requires_grad=1\n"
      "v1 = leaf [] seed=2 requires_grad=0\n"
      "v2 v3 = func vjp n=1 v0 v1 body=sum,v0\n"
      "v4 v5 = func compiled_vjp n=1 v0 v1 body=sum,v0\n");
  EXPECT_EQ(bug_classes(modes), std::vector<BugClass>{BugClass::kModeInconsistency});
  EXPECT_TRUE(bug_classes(parse_program("v0 = leaf [2] seed=1 requires_grad=1\n"
                                        "v1 = leaf [] seed=2 requires_grad=0\n"
                                        "v2 v3 = func vjp n=1 v0 v1 body=sum,v0\n"))
                  .empty());
  BugClassCoverage coverage;
  coverage.add(parse_program("v0 = leaf [2] seed=1 requires_grad=1\nv1 = sum v0\n"));
  coverage.add_mode_check(modes);
  EXPECT_EQ(coverage.programs(), 1);
  EXPECT_EQ(coverage.count(BugClass::kModeInconsistency), 1);
  EXPECT_NE(coverage.report().find("mode inconsistency              1\n"), std::string::npos)
      << coverage.report();
}

}  // namespace
}  // namespace ag::proptests
