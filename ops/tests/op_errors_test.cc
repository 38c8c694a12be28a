// Bad arguments: every op throws ag::Error naming itself and the shapes (or the dim / target /
// probability at fault), and leaves its arguments untouched.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_error;

using Binary = Tensor (*)(const Tensor&, const Tensor&);
using InPlace = Tensor& (*)(Tensor&, const Tensor&);

Tensor t32(const Shape& s) { return ops::uniform(s, 0.5, 1.5, 1); }
Tensor t64(const Shape& s) { return ops::uniform(s, 0.5, 1.5, 1, DType::kFloat64); }
Tensor grad_leaf(const Shape& s) { return t32(s).set_requires_grad(true); }

TEST(OpErrors, BroadcastShapeMismatch) {
  for (Binary op : std::initializer_list<Binary>{ops::add, ops::sub, ops::mul, ops::div}) {
    expect_error([&] { op(t32({2, 3}), t32({4})); }, {"[2, 3]", "[4]", "cannot be broadcast"});
  }
  expect_error([] { ops::add(t32({2, 3}), t32({4})); }, {"add:"});
  expect_error([] { ops::div(t32({2, 3}), t32({2})); }, {"div:", "[2, 3]", "[2]"});
  expect_error([] { ops::pow(t32({3, 1}), t32({2, 2})); }, {"pow:", "[3, 1]", "[2, 2]"});
}

TEST(OpErrors, DtypeMismatch) {
  expect_error([] { ops::mul(t32({2}), t64({2})); }, {"mul", "float32[2]", "float64[2]", "dtype"});
  expect_error([] { ops::mm(t32({2, 2}), t64({2, 2})); }, {"mm", "float32[2, 2]", "float64"});
  expect_error(
      [] {
        ops::linear(t32({2, 3}), t32({4, 3}), t64({4}));
      },
      {"linear", "float64[4]", "float32[4, 3]"});
  expect_error([] { ops::addmm(t64({3}), t32({2, 2}), t32({2, 3})); }, {"addmm", "float64[3]"});
}

TEST(OpErrors, UndefinedInput) {
  expect_error([] { ops::exp(Tensor()); }, {"exp", "undefined"});
  expect_error([] { ops::sum(Tensor()); }, {"sum", "undefined"});
  expect_error([] { ops::add(t32({2}), Tensor()); }, {"add", "undefined"});
  expect_error([] { ops::reshape(Tensor(), {1}); }, {"reshape", "undefined"});
}

TEST(OpErrors, MatrixProducts) {
  expect_error([] { ops::mm(t32({2, 3}), t32({4, 5})); }, {"mm", "[2, 3]", "[4, 5]"});
  expect_error([] { ops::mm(t32({3}), t32({3, 2})); }, {"mm", "2-D", "float32[3]"});
  expect_error(
      [] {
        ops::bmm(t32({2, 2, 3}), t32({3, 3, 2}));
      },
      {"bmm", "batch", "[2, 2, 3]", "[3, 3, 2]"});
  expect_error([] { ops::bmm(t32({2, 3}), t32({3, 2})); }, {"bmm", "3-D"});
  expect_error(
      [] {
        ops::addmm(t32({3, 1}), t32({2, 2}), t32({2, 3}));
      },
      {"addmm", "[3, 1]", "[2, 3]"});
  expect_error(
      [] {
        ops::linear(t32({2, 3}), t32({4, 5}));
      },
      {"linear", "float32[2, 3]", "float32[4, 5]"});
  expect_error(
      [] {
        ops::linear(t32({2, 3}), t32({4, 3}), t32({3}));
      },
      {"linear", "bias", "float32[3]", "float32[4, 3]"});
  expect_error([] { ops::matmul(t32({3}), t32({4})); }, {"matmul", "[3]", "[4]"});
  expect_error(
      [] {
        ops::matmul(t32({2, 2, 3}), t32({3, 3, 2}));
      },
      {"matmul", "[2, 2, 3]", "[3, 3, 2]"});
  expect_error([] { ops::matmul(t32({2, 3}), t32({2, 3})); }, {"[2, 3]", "cannot be multiplied"});
}

TEST(OpErrors, DimOutOfRange) {
  expect_error([] { ops::sum(t32({2, 3}), 2); }, {"sum", "dim 2", "[2, 3]"});
  expect_error([] { ops::sum(t32({2, 3}), -3); }, {"sum", "dim -3", "[2, 3]"});
  expect_error([] { ops::mean(t32({2, 3}), 5); }, {"mean", "dim 5", "[2, 3]"});
  expect_error([] { ops::transpose(t32({2, 3}), 0, 2); }, {"transpose", "dim 2", "[2, 3]"});
  expect_error([] { ops::log_softmax(t32({2, 3}), 2); }, {"log_softmax", "dim 2", "[2, 3]"});
}

TEST(OpErrors, ShapesThatDoNotFit) {
  expect_error([] { ops::reshape(t32({2, 3}), {4}); }, {"reshape", "[4]", "float32[2, 3]"});
  expect_error([] { ops::reshape(t32({2, 3}), {-1, -1}); }, {"reshape", "-1"});
  expect_error([] { ops::reshape(t32({2, 3}), {4, -1}); }, {"reshape", "[4, -1]", "[2, 3]"});
  expect_error([] { ops::view(t32({2, 3}), {7}); }, {"reshape", "[7]", "[2, 3]"});
  expect_error([] { ops::sum_to(t32({2, 3}), {2}); }, {"sum_to", "[2]", "[2, 3]"});
  expect_error(
      [] {
        ops::broadcast_to(t32({2, 3}), {3, 3});
      },
      {"broadcast_to", "[2, 3]", "[3, 3]"});
  expect_error([] { ops::zeros({2, -1}); }, {"full", "[2, -1]"});
  expect_error([] { ops::from_vector({1, 2, 3}, {2, 2}); }, {"from_vector", "3 values", "[2, 2]"});
}

TEST(OpErrors, CrossEntropyTargets) {
  expect_error(
      [] {
        ops::cross_entropy(t32({2, 3}), {0, 3});
      },
      {"cross_entropy", "target 3", "3 classes", "[2, 3]"});
  expect_error([] { ops::cross_entropy(t32({2, 3}), {-1, 0}); }, {"cross_entropy", "target -1"});
  expect_error(
      [] {
        ops::cross_entropy(t32({2, 3}), {0});
      },
      {"cross_entropy", "1 targets", "[2, 3]"});
  expect_error([] { ops::cross_entropy(t32({2, 3, 4}), {0, 1}); }, {"cross_entropy", "[2, 3, 4]"});
  expect_error([] { ops::nll_loss(t32({2, 3}), {0, 5}); }, {"nll_loss", "target 5", "[2, 3]"});
  expect_error([] { ops::nll_loss(t32({6}), {0}); }, {"nll_loss", "float32[6]"});
}

TEST(OpErrors, Dropout) {
  expect_error([] { ops::dropout(t32({2}), 1.5, true, 0); }, {"dropout", "1.5"});
  expect_error([] { ops::dropout(t32({2}), -0.1, true, 0); }, {"dropout", "-0.1"});
  expect_error([] { ops::dropout2d(t32({4}), 0.5, true, 0); }, {"dropout2d", "float32[4]"});
  expect_error([] { ops::dropout2d(t32({2, 2}), 2.0, false, 0); }, {"dropout2d", "2"});
}

// In-place ops check before writing: a failed call changes neither the values nor the version.
TEST(OpErrors, InPlaceLeavesTheTargetUntouched) {
  Tensor a = t32({2, 3});
  const std::vector<double> before = a.to_vector();
  const uint32_t version = a.version();
  expect_error([&] { ops::add_(a, t32({3, 3})); }, {"add_", "[3, 3]", "[2, 3]"});
  expect_error([&] { ops::mul_(a, t32({2, 1, 3})); }, {"mul_", "[2, 1, 3]", "[2, 3]"});
  expect_error([&] { ops::copy_(a, t64({2, 3})); }, {"copy_", "float64[2, 3]", "float32[2, 3]"});
  EXPECT_EQ(a.to_vector(), before);
  EXPECT_EQ(a.version(), version);
}

TEST(OpErrors, InPlaceOnALeafThatRequiresGrad) {
  Tensor w = grad_leaf({2});
  for (InPlace op : {ops::add_, ops::mul_, ops::copy_}) {
    expect_error([&] { op(w, t32({2})); }, {"leaf", "requires grad", "float32[2]"});
  }
  expect_error([&] { ops::mul_(w, t32({2})); }, {"mul_:"});
  EXPECT_EQ(w.version(), 0u);
  EXPECT_TRUE(w.is_leaf());
  // PyTorch allows it under no_grad (e.g. an optimizer step): no history, but a new version.
  NoGradGuard no_grad;
  ops::add_(w, t32({2}));
  EXPECT_EQ(w.version(), 1u);
  EXPECT_TRUE(w.is_leaf());
}

}  // namespace
}  // namespace ag
