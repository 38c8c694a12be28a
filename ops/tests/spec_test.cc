// The derivative spec's contracts (Note [Derivative spec]): a formula may read only the slots its
// uses list names, and only its own op's attribute type; both are checked on every evaluation.
#include "ops/spec.h"

#include <gtest/gtest.h>

#include <set>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/tests/test_util.h"
#include "ops/op_list.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/schema.h"

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

namespace ag::ops {
namespace {

// Every registered spec is an op of the op list, under the list's name (Note [The op list]),
// except the derivatives recorded as ops of their own.
TEST(OpList, EveryRegisteredSpecIsNamedAsInTheList) {
  const std::set<std::string> derivative_ops = {
      "nll_loss_backward", "scaled_product",   "view_scatter",        "view_gather",
      "view_zeroed",       "select_backward",  "slice_backward",      "diagonal_backward",
      "unfold_backward",   "softmax_backward", "log_softmax_backward"};
  ASSERT_FALSE(all_op_specs().empty());
  for (const OpSpec* spec : all_op_specs()) {
    OpId op = OpId::kAdd;
    EXPECT_TRUE(op_named(spec->name().c_str(), &op) || derivative_ops.count(spec->name()) == 1)
        << "spec '" << spec->name() << "' is not an op of ops/op_list.h";
  }
}

// Every elementwise kind's op records the spec of the kind's name.
TEST(OpList, EachElementwiseOpRecordsTheSpecOfItsKind) {
  auto spec_name = [](const Tensor& y) -> std::string {
    return y.grad_fn() ? y.grad_fn()->name() : "none";
  };
  const Tensor a = leaf({0.5, 1.5}, {2}), b = leaf({1.0, 2.0}, {2});
  EXPECT_EQ(spec_name(add(a, b)), kind_name(BinaryKind::kAdd));
  EXPECT_EQ(spec_name(sub(a, b)), kind_name(BinaryKind::kSub));
  EXPECT_EQ(spec_name(mul(a, b)), kind_name(BinaryKind::kMul));
  EXPECT_EQ(spec_name(div(a, b)), kind_name(BinaryKind::kDiv));
  EXPECT_EQ(spec_name(pow(a, b)), kind_name(BinaryKind::kPow));
  EXPECT_EQ(spec_name(threshold_backward(a, b)), kind_name(BinaryKind::kThresholdBackward));
  EXPECT_EQ(spec_name(neg(a)), kind_name(UnaryKind::kNeg));
  EXPECT_EQ(spec_name(exp(a)), kind_name(UnaryKind::kExp));
  EXPECT_EQ(spec_name(log(a)), kind_name(UnaryKind::kLog));
  EXPECT_EQ(spec_name(tanh(a)), kind_name(UnaryKind::kTanh));
  EXPECT_EQ(spec_name(sigmoid(a)), kind_name(UnaryKind::kSigmoid));
  EXPECT_EQ(spec_name(relu(a)), kind_name(UnaryKind::kRelu));
  EXPECT_EQ(spec_name(add(a, 2.0)), kind_name(UnaryKind::kAddScalar));
  EXPECT_EQ(spec_name(mul(a, 2.0)), kind_name(UnaryKind::kMulScalar));
  EXPECT_EQ(spec_name(pow(a, 2.0)), kind_name(UnaryKind::kPowScalar));
  for (BinaryKind k : kAllBinaryKinds) EXPECT_NE(find_op_spec(kind_name(k)), nullptr);
  for (UnaryKind k : kAllUnaryKinds) EXPECT_NE(find_op_spec(kind_name(k)), nullptr) << kind_name(k);
}

}  // namespace
}  // namespace ag::ops

namespace ag::ops {
namespace {

// Note [Jvp rules]: a tangent can reach any op with a derivative, so each one declares its rule.
TEST(OpList, EveryRegisteredOpWithADerivativeDeclaresAJvpRule) {
  size_t checked = 0;
  for (const OpSpec* spec : all_op_specs()) {
    if (!spec->has_derivative()) continue;
    EXPECT_NE(spec->jvp(), nullptr) << "'" << spec->name() << "' declares no jvp rule";
    ++checked;
  }
  EXPECT_GT(checked, 50u);
}

// Note [Batching rules]: jacfwd and hessian run every op at once, none row by row, so each op whose
// jvp rule is not jvp_from_formulas (which batches by itself) declares a batching rule.
TEST(OpList, EveryRegisteredOpWithAJvpRuleBatches) {
  size_t checked = 0;
  for (const OpSpec* spec : all_op_specs()) {
    if (spec->jvp() == nullptr || spec->jvp() == jvp_from_formulas) continue;
    EXPECT_NE(spec->batched_jvp(), nullptr) << "'" << spec->name() << "' declares no batching rule";
    ++checked;
  }
  EXPECT_GT(checked, 40u);
}

}  // namespace
}  // namespace ag::ops
