// The derivative spec's contracts (Note [Derivative spec]): a formula may read only the slots its
// uses list names, and only its own op's attribute type; both are checked on every evaluation.
#include "ops/spec.h"

#include <gtest/gtest.h>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag::ops {
namespace {

using ag::testing::error_of;
using ag::testing::leaf;

// y = x * w, with a formula for x that reads `x` although its uses list names only `w`.
struct StaleUses {
  static constexpr Input x{0, "x"}, w{1, "w"};
  static const OpSpec spec;
};
const OpSpec StaleUses::spec{"stale_uses",
                             {{x, {w}, [](const Ctx& c) { return c.grad() * c[w] * c[x]; }},
                              {w, {x}, [](const Ctx& c) { return c.grad() * c[x]; }}}};

// y = 2x, recorded with ScalarAttrs, whose formula reads DimAttrs.
struct WrongAttrs {
  static constexpr Input x{0, "x"};
  static const OpSpec spec;
};
const OpSpec WrongAttrs::spec{"wrong_attrs",
                              {{x, {}, [](const Ctx& c) {
                                  return c.grad() * static_cast<double>(c.attrs<DimAttrs>().dim);
                                }}}};

TEST(Spec, AFormulaReadingASlotItsUsesListDoesNotNameFails) {
  Tensor x = leaf({1, 2}, {2});
  Tensor w = leaf({3, 4}, {2}, /*requires_grad=*/false);
  Tensor y = record(StaleUses::spec, {&x, &w}, mul(x.detach(), w));
  const std::string what = error_of([&] { grad({sum(y)}, {x}); });
  EXPECT_NE(what.find("the formula for 'x' reads 'x', which its uses list does not name"),
            std::string::npos)
      << what;
}

TEST(Spec, AFormulaReadingAnotherOpsAttributesFails) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = record(WrongAttrs::spec, {&x}, mul(x.detach(), 2.0), ScalarAttrs{2.0});
  const std::string what = error_of([&] { grad({sum(y)}, {x}); });
  EXPECT_NE(what.find("reads attributes of another type"), std::string::npos) << what;
}

TEST(Spec, SlotsAreNumberedInOrderOfFirstUse) {
  EXPECT_EQ(StaleUses::spec.num_slots(), 2u);
  EXPECT_EQ(StaleUses::spec.slot_index(StaleUses::w), 0);
  EXPECT_EQ(StaleUses::spec.slot_index(StaleUses::x), 1);
  EXPECT_EQ(WrongAttrs::spec.slot_index(Result()), -1);
}

TEST(Spec, FormulasMustFollowTheInputsOrder) {
  const std::string what = error_of([] {
    OpSpec("swapped", {{StaleUses::w, {}, [](const Ctx& c) { return c.grad(); }},
                       {StaleUses::x, {}, [](const Ctx& c) { return c.grad(); }}});
  });
  EXPECT_NE(what.find("formulas must follow the op's inputs"), std::string::npos) << what;
}

}  // namespace
}  // namespace ag::ops
