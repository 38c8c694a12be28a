// index_select, gather, scatter_add, max/min along a dim, cat and stack: values, indices, gradients
// and second derivatives pinned to PyTorch 2.15 (repeated indices add up; ties go to the first
// index; NaN wins; each joined input gets its slice), and their errors. The numbers come from
// index_ops_goldens.py beside this file (float64; each case is named after its line there). Smooth
// points are gradchecked in op_gradients_test.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/autograd.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::error_of;
using testing::expect_values;
using testing::leaf;
using testing::values;

const std::vector<double> kX = {0.5, -1.0, 2.0, 0.25, 1.0, -0.5};
const std::vector<double> kW6 = {0.5, -1.0, 2.0, 1.5, -0.25, 3.0};

// The gradients of sum(y * w) w.r.t. xs.
TensorList grads_of(const Tensor& y, const Tensor& w, const TensorList& xs) {
  return grad({ops::sum(ops::mul(y, w))}, xs);
}

std::vector<double> as_doubles(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

TEST(IndexOps, IndexSelectAddsRepeatedIndices) {  // "index_select"
  Tensor x = leaf(kX, {2, 3});
  const Tensor y = ops::index_select(x, 1, {2, 0, 2});
  expect_values(y, {2.0, 0.5, 2.0, -0.5, 0.25, -0.5});
  expect_values(grads_of(y, values(kW6, {2, 3}), {x})[0], {-1.0, 0.0, 2.5, -0.25, 0.0, 4.5});
}

TEST(IndexOps, GatherAndItsDoubleBackward) {  // "gather"
  Tensor x = leaf(kX, {2, 3});
  const Tensor y = ops::gather(x, 0, {{2, 3}, {1, 0, 1, 1, 1, 0}});
  expect_values(y, {0.25, -1.0, -0.5, 0.25, 1.0, 2.0});
  Tensor v = leaf(kW6, {2, 3});
  const Tensor g = grad({y}, {x}, GradArgs().grad_outputs({v}).create_graph())[0];
  expect_values(g, {0.0, -1.0, 3.0, 2.0, -0.25, 2.0});
  const Tensor gv = grad({ops::sum(ops::mul(g, values({0, 1, 2, 3, 4, 5}, {2, 3})))}, {v})[0];
  expect_values(gv, {3.0, 1.0, 5.0, 3.0, 4.0, 2.0});
}

TEST(IndexOps, ScatterAdd) {  // "scatter_add"
  Tensor s = leaf(kX, {2, 3});
  Tensor src = leaf({1.0, 2.0, 3.0, 4.0}, {2, 2});
  const Tensor y = ops::scatter_add(s, 1, {{2, 2}, {2, 2, 0, 1}}, src);
  expect_values(y, {0.5, -1.0, 5.0, 3.25, 5.0, -0.5});
  const TensorList g = grads_of(y, values(kW6, {2, 3}), {s, src});
  expect_values(g[0], kW6);
  expect_values(g[1], {2.0, 2.0, 1.5, -0.25});
}

// "max_dim1_keepdim0/1", "min_dim1_keepdim0/1": the first index on ties.
TEST(IndexOps, MaxMinAlongADimGoToTheFirstIndex) {
  Tensor x = leaf({1.0, 3.0, 3.0, 2.0, -1.0, -1.0}, {2, 3});
  for (bool keepdim : {false, true}) {
    const Shape out = keepdim ? Shape{2, 1} : Shape{2};
    const ops::ValuesIndices mx = ops::max(x, 1, keepdim);
    EXPECT_EQ(mx.values.shape(), out);
    EXPECT_EQ(mx.indices.shape, out);
    expect_values(mx.values, {3.0, 2.0});
    expect_values(values(as_doubles(mx.indices.values), {2}), {1.0, 0.0});
    expect_values(grads_of(mx.values, values({2.0, -3.0}, out), {x})[0],
                  {0.0, 2.0, 0.0, -3.0, 0.0, 0.0});
    const ops::ValuesIndices mn = ops::min(x, -1, keepdim);
    expect_values(mn.values, {1.0, -1.0});
    expect_values(values(as_doubles(mn.indices.values), {2}), {0.0, 1.0});
    expect_values(grads_of(mn.values, values({2.0, -3.0}, out), {x})[0],
                  {2.0, 0.0, 0.0, 0.0, -3.0, 0.0});
  }
  const ops::ValuesIndices m0 = ops::max(x, 0);  // "max_dim0"
  expect_values(m0.values, {2.0, 3.0, 3.0});
  expect_values(values(as_doubles(m0.indices.values), {3}), {1.0, 0.0, 0.0});
  expect_values(grad({ops::sum(m0.values)}, {x})[0], {0.0, 1.0, 1.0, 1.0, 0.0, 0.0});
}

TEST(IndexOps, MaxOfNaNIsTheFirstNaN) {  // "max_nan"
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = leaf({1.0, nan, 3.0, nan}, {1, 4});
  const ops::ValuesIndices m = ops::max(x, 1);
  EXPECT_TRUE(std::isnan(m.values.to_vector()[0]));
  EXPECT_EQ(m.indices.values, std::vector<int64_t>{1});
  expect_values(grad({ops::sum(m.values)}, {x})[0], {0.0, 1.0, 0.0, 0.0});
}

// A gradient of max through its values, second order: the gradient is a scatter of the incoming
// one, linear in it, so the derivative of sum(g * w) w.r.t. the incoming gradient gathers w.
TEST(IndexOps, MaxDoubleBackwardGathers) {
  Tensor x = leaf({1.0, 3.0, 3.0, 2.0, -1.0, -1.0}, {2, 3});
  Tensor v = leaf({2.0, -3.0}, {2});
  const Tensor g =
      grad({ops::max(x, 1).values}, {x}, GradArgs().grad_outputs({v}).create_graph())[0];
  expect_values(grad({ops::sum(ops::mul(g, values(kW6, {2, 3})))}, {v})[0], {-1.0, 1.5});
}

TEST(IndexOps, CatGivesEachInputItsSlice) {  // "cat"
  Tensor a = leaf({1.0, 2.0, 3.0, 4.0}, {2, 2});
  Tensor b = leaf({5.0, 6.0}, {2, 1});
  const Tensor y = ops::cat({a, b}, 1);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  expect_values(y, {1.0, 2.0, 5.0, 3.0, 4.0, 6.0});
  const TensorList g = grads_of(y, values(kW6, {2, 3}), {a, b});
  expect_values(g[0], {0.5, -1.0, 1.5, -0.25});
  expect_values(g[1], {2.0, 3.0});
  EXPECT_EQ(g[1].shape(), (Shape{2, 1}));
}

TEST(IndexOps, StackAndItsDoubleBackward) {  // "stack"
  Tensor a = leaf({1.0, 2.0, 3.0}, {3});
  Tensor b = leaf({4.0, 5.0, 6.0}, {3});
  const Tensor y = ops::stack({a, b}, 1);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  expect_values(y, {1.0, 4.0, 2.0, 5.0, 3.0, 6.0});
  Tensor v = leaf(kW6, {3, 2});
  const TensorList g = grad({y}, {a, b}, GradArgs().grad_outputs({v}).create_graph());
  expect_values(g[0], {0.5, 2.0, -0.25});
  expect_values(g[1], {-1.0, 1.5, 3.0});
  const Tensor total = ops::add(ops::sum(ops::mul(g[0], values({1, 2, 3}, {3}))), ops::sum(g[1]));
  expect_values(grad({total}, {v})[0], {1.0, 1.0, 2.0, 1.0, 3.0, 1.0});
}

// Only the inputs that require grad get an edge; the others are constants.
TEST(IndexOps, CatOfConstantsAndLeaves) {
  Tensor a = leaf({1.0, 2.0}, {2});
  const Tensor c = values({7.0}, {1});
  const Tensor y = ops::cat({c, a, c});
  expect_values(y, {7.0, 1.0, 2.0, 7.0});
  expect_values(grads_of(y, values({1, 2, 3, 4}, {4}), {a})[0], {2.0, 3.0});
  EXPECT_FALSE(ops::cat({c, c}).requires_grad());
}

void expect_error_with(const std::function<void()>& f, const std::string& part) {
  const std::string e = error_of(f);
  EXPECT_NE(e.find(part), std::string::npos) << "'" << e << "' lacks '" << part << "'";
}

// Bad input: the error names the op, the index and the shapes, and the graph stays usable.
// Note [The index is a saved value]: PyTorch's nodes save the index (max/min: the indices) as a
// tensor, which a backward without retain_graph frees, so a second backward through them raises;
// scatter_add's gradient for self does not read it (checked against PyTorch 2.15).
TEST(IndexOps, TheIndexIsFreedLikeASavedValue) {
  Tensor x = leaf(kX, {2, 3});
  Tensor src = leaf({1.0, 2.0}, {1, 2});
  const Tensor plain = values(kX, {2, 3});
  struct Case {
    const char* op;
    Tensor y;
    Tensor wrt;
    const char* freed;  // the message's value and node, or null: no second-backward error
  };
  const Case cases[] = {
      {"gather", ops::gather(x, 1, {{2, 1}, {2, 0}}), x, "saved by 'gather'"},
      {"index_select", ops::index_select(x, 1, {2, 0}), x, "'index' saved by 'index_select'"},
      {"scatter_add src", ops::scatter_add(plain, 1, {{1, 2}, {2, 0}}, src), src,
       "'index' saved by 'scatter_add'"},
      {"scatter_add self", ops::scatter_add(x, 1, {{1, 2}, {2, 0}}, values({1.0, 2.0}, {1, 2})), x,
       nullptr},
      {"max", ops::max(x, 1).values, x, "'indices' saved by 'max_dim'"},
      {"min", ops::min(x, 0, true).values, x, "'indices' saved by 'min_dim'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    const Tensor kept = grad({ops::sum(c.y)}, {c.wrt}, GradArgs().retain_graph())[0];
    const Tensor first = grad({ops::sum(c.y)}, {c.wrt})[0];
    EXPECT_EQ(kept.to_vector(), first.to_vector());
    if (c.freed == nullptr) {
      expect_values(grad({ops::sum(c.y)}, {c.wrt})[0], first.to_vector());
      continue;
    }
    const std::string e = error_of([&] { grad({ops::sum(c.y)}, {c.wrt}); });
    EXPECT_NE(e.find("Trying to backward through the graph a second time"), std::string::npos) << e;
    EXPECT_NE(e.find(c.freed), std::string::npos) << e;
  }
}

// PyTorch's GatherBackward0 saves self, though gather's gradient needs only its shape: a write
// into self before the backward fails the version check (checked against PyTorch 2.15);
// index_select and max/min along a dim save only self's shape.
TEST(IndexOps, GatherSavesSelf) {
  Tensor x = leaf(kX, {2, 3});
  Tensor y = ops::mul(x, 2.0);
  const Tensor g = ops::gather(y, 1, {{2, 1}, {2, 0}});
  const Tensor s = ops::index_select(y, 1, {2, 0});
  const Tensor m = ops::max(y, 1).values;
  ops::add_(y, ops::ones({1}, DType::kFloat64));
  const std::string e = error_of([&] { grad({ops::sum(g)}, {x}); });
  EXPECT_NE(e.find("modified by an in-place operation"), std::string::npos) << e;
  expect_values(grad({ops::sum(s)}, {x}, GradArgs().retain_graph())[0],
                {2.0, 0.0, 2.0, 2.0, 0.0, 2.0});
  expect_values(grad({ops::sum(m)}, {x})[0], {0.0, 0.0, 2.0, 0.0, 2.0, 0.0});
}

TEST(IndexOps, Errors) {
  Tensor x = leaf(kX, {2, 3});
  const Tensor y = ops::mul(x, 2.0);
  expect_error_with([&] { ops::index_select(y, 1, {3}); },
                    "index_select: index 3 at position 0 is out of bounds for dim 1 with size 3");
  expect_error_with([&] { ops::index_select(y, 1, {-1}); }, "index -1");
  expect_error_with(
      [&] {
        ops::gather(y, 1, {{1, 2}, {0, 3}});
      },
      "gather: index 3 at position 1 is out of bounds for dim 1 with size 3");
  expect_error_with(
      [&] {
        ops::gather(y, 1, {{1}, {0}});
      },
      "gather: index [1] must have as many dims as the input");
  expect_error_with(
      [&] {
        ops::gather(y, 1, {{3, 1}, {0, 0, 0}});
      },
      "gather: index [3, 1] is larger than the input");
  expect_error_with(
      [&] {
        ops::scatter_add(y, 0, {{1, 1}, {2}}, ops::ones({1, 1}, DType::kFloat64));
      },
      "scatter_add: index 2 at position 0 is out of bounds for dim 0 with size 2");
  expect_error_with([&] { ops::max(ops::zeros({2, 0}), 1); }, "max: dim 1 of");
  expect_error_with([&] { ops::min(y, 2); }, "min: dim 2 is out of range");
  expect_error_with(
      [&] {
        ops::cat({y, ops::zeros({3, 3}, DType::kFloat64)}, 1);
      },
      "cat: sizes of tensors must match except in dim 1: tensor 0 is [2, 3] and "
      "tensor 1 is [3, 3]");
  expect_error_with([&] { ops::cat({ops::sum(y)}); }, "cat: a 0-dim tensor (at position 0)");
  expect_error_with([&] { ops::cat({}); }, "cat: expected a non-empty list");
  expect_error_with(
      [&] {
        ops::stack({y, ops::zeros({3}, DType::kFloat64)});
      },
      "stack: expects each tensor to be equal size, but got [2, 3] at entry 0 and "
      "[3] at entry 1");
  expect_error_with([&] { ops::stack({y}, 3); }, "stack: dim 3 is out of range");
  expect_values(grad({ops::sum(y)}, {x})[0], std::vector<double>(6, 2.0));
}

}  // namespace
}  // namespace ag
