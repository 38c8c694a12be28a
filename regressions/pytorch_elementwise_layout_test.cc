// The layout of elementwise results and clones (issue 44, "the layout gap"), pinned to PyTorch
// 2.15: TensorIterator gives an elementwise op's output the stride order of its inputs, and
// clone() (memory_format=preserve) keeps a dense input's strides (Note [Output layout of
// elementwise ops], ops/output_layout.h). So (t * 2).view(6) raises for a transpose t, and
// t.clone().reshape(6) copies. The comments give the PyTorch program and what it printed.
#include <gtest/gtest.h>

#include <functional>
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
using testing::shares_storage;
using testing::values;

std::vector<double> iota(int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i);
  return v;
}
Tensor arange(const Shape& shape) { return values(iota(numel(shape)), shape); }

// x = torch.arange(6.).reshape(2, 3); t = x.t()  (3x2, strides (1, 3))
Tensor transposed() { return ops::t(arange({2, 3})); }

// t.clone(), t * 2, t + t, t.exp(), -t, t + torch.ones(3, 2), t.clamp(0, 1), t.pow(2.),
// torch.where(t > 1, t, t), t > t, torch.maximum(t, t), t + torch.ones(2), torch.ones(2) + t,
// t + torch.ones(3, 1), torch.ones(3, 1) + t, torch.tensor(2.) * t, t.relu(): all (1, 3).
TEST(ElementwiseLayout, ATransposeGivesTransposedResults) {
  const Tensor t = transposed();
  const std::vector<std::pair<std::string, std::function<Tensor()>>> cases = {
      {"clone", [&] { return ops::clone(t); }},
      {"t * 2", [&] { return ops::mul(t, 2.0); }},
      {"t + t", [&] { return ops::add(t, t); }},
      {"exp", [&] { return ops::exp(t); }},
      {"neg", [&] { return ops::neg(t); }},
      {"relu", [&] { return ops::relu(t); }},
      {"t + ones(3, 2)",
       [&] {
         return ops::add(t, ops::ones({3, 2}, DType::kFloat64));
       }},
      {"clamp", [&] { return ops::clamp(t, 0, 1); }},
      {"pow", [&] { return ops::pow(t, 2.0); }},
      {"where", [&] { return ops::where(ops::gt(t, ops::ones({}, DType::kFloat64)), t, t); }},
      {"gt", [&] { return ops::gt(t, t); }},
      {"maximum", [&] { return ops::maximum(t, t); }},
      {"t + ones(2)", [&] { return ops::add(t, ops::ones({2}, DType::kFloat64)); }},
      {"ones(2) + t", [&] { return ops::add(ops::ones({2}, DType::kFloat64), t); }},
      {"t + ones(3, 1)",
       [&] {
         return ops::add(t, ops::ones({3, 1}, DType::kFloat64));
       }},
      {"ones(3, 1) + t",
       [&] {
         return ops::add(ops::ones({3, 1}, DType::kFloat64), t);
       }},
      {"0-d * t", [&] { return ops::mul(values({2}, {}), t); }},
  };
  for (const auto& [name, op] : cases) {
    const Tensor out = op();
    EXPECT_EQ(out.strides(), (Shape{1, 3})) << name;
    EXPECT_FALSE(out.is_contiguous()) << name;
  }
  expect_values(ops::contiguous(ops::mul(t, 2.0)), {0, 6, 2, 8, 4, 10});
  expect_values(ops::contiguous(ops::add(t, ops::ones({2}, DType::kFloat64))), {1, 4, 2, 5, 3, 6});
}

// torch.ones(3, 2) + t: the first operand decides, (2, 1). t.masked_fill(t > 1, 0.): (2, 1)
// (PyTorch clones contiguous first). x[:, ::2] * 2 (not dense): (2, 1).
TEST(ElementwiseLayout, AContiguousFirstOperandOrANonDenseInputGivesContiguous) {
  const Tensor t = transposed();
  const Tensor first = ops::add(ops::ones({3, 2}, DType::kFloat64), t);
  EXPECT_TRUE(first.is_contiguous());
  expect_values(first, {1, 4, 2, 5, 3, 6});
  EXPECT_TRUE(ops::masked_fill(t, ops::gt(t, values({1}, {})), 0.0).is_contiguous());
  const Tensor sliced = ops::slice(arange({2, 3}), 1, 0, 3, 2);
  const Tensor doubled = ops::mul(sliced, 2.0);
  EXPECT_TRUE(doubled.is_contiguous());
  expect_values(doubled, {0, 4, 6, 10});
}

// p = torch.arange(24.).reshape(2, 3, 4).permute(2, 0, 1): (p * 2).stride() == (1, 12, 4),
// p[:, :1].exp().stride() == (1, 12, 4); p.sum(0) and p.sum(1) are contiguous; p[::2].exp() and
// p[::2].clone() (not dense) are (1, 6, 2).
TEST(ElementwiseLayout, APermutationIsKeptAndReductionsStayContiguous) {
  const Tensor p = ops::permute(arange({2, 3, 4}), {2, 0, 1});
  EXPECT_EQ(ops::mul(p, 2.0).strides(), (Shape{1, 12, 4}));
  EXPECT_EQ(ops::exp(ops::slice(p, 1, 0, 1)).strides(), (Shape{1, 12, 4}));
  EXPECT_TRUE(ops::sum(p, 0).is_contiguous());
  EXPECT_TRUE(ops::sum(p, 1).is_contiguous());
  const Tensor stepped = ops::slice(p, 0, 0, 4, 2);
  EXPECT_EQ(ops::exp(stepped).strides(), (Shape{1, 6, 2}));
  const Tensor copy = ops::clone(stepped);
  EXPECT_EQ(copy.strides(), (Shape{1, 6, 2}));
  expect_values(ops::contiguous(copy), ops::contiguous(stepped).to_vector());
}

// q = torch.arange(6.).reshape(3, 2).t().unsqueeze(1): size (2, 1, 3), strides (1, 6, 2):
// q * 2, q.exp(), q.clone(), q + q all (1, 6, 2).
// c = torch.arange(48.).reshape(3, 4, 4).permute(2, 0, 1).unsqueeze(0): size (1, 4, 3, 4),
// strides (4, 1, 16, 4), channels-last: c.exp() and c + c (48, 1, 16, 4); c * 2 (a wrapped
// scalar: no fast set-up) and c.clone() keep (4, 1, 16, 4).
TEST(ElementwiseLayout, DimsOfSizeOneAndChannelsLastFollowTensorIterator) {
  const Tensor q = ops::unsqueeze(ops::t(arange({3, 2})), 1);
  ASSERT_EQ(q.strides(), (Shape{1, 6, 2}));
  for (const Tensor& out : {ops::mul(q, 2.0), ops::exp(q), ops::clone(q), ops::add(q, q)}) {
    EXPECT_EQ(out.strides(), (Shape{1, 6, 2}));
  }
  const Tensor c = ops::unsqueeze(ops::permute(arange({3, 4, 4}), {2, 0, 1}), 0);
  ASSERT_EQ(c.strides(), (Shape{4, 1, 16, 4}));
  EXPECT_EQ(ops::exp(c).strides(), (Shape{48, 1, 16, 4}));
  EXPECT_EQ(ops::add(c, c).strides(), (Shape{48, 1, 16, 4}));
  EXPECT_EQ(ops::mul(c, 2.0).strides(), (Shape{4, 1, 16, 4}));
  EXPECT_EQ(ops::clone(c).strides(), (Shape{4, 1, 16, 4}));
}

// r = torch.arange(2.).reshape(2, 1).expand(2, 3).t(): size (3, 2), strides (0, 1);
// r.exp() and r.clone() are (2, 1); r + t and t + r are (1, 3) (the broadcast dim is skipped).
TEST(ElementwiseLayout, ExpandedInputsGiveDenseResults) {
  const Tensor r = ops::t(ops::expand(arange({2, 1}), {2, 3}));
  ASSERT_EQ(r.strides(), (Shape{0, 1}));
  EXPECT_TRUE(ops::exp(r).is_contiguous());
  EXPECT_TRUE(ops::clone(r).is_contiguous());
  expect_values(ops::clone(r), {0, 1, 0, 1, 0, 1});
  const Tensor t = transposed();
  EXPECT_EQ(ops::add(r, t).strides(), (Shape{1, 3}));
  EXPECT_EQ(ops::add(t, r).strides(), (Shape{1, 3}));
  expect_values(ops::contiguous(ops::add(r, t)), {0, 4, 1, 5, 2, 6});
}

// (t * 2).view(6) raises "view size is not compatible with input tensor's size and stride (at
// least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.";
// (t * 2).reshape(6) and t.clone().reshape(6) are copies (their _base is None).
TEST(ElementwiseLayout, ViewOfATransposedResultRaisesAndReshapeCopies) {
  const Tensor t = transposed();
  const Tensor doubled = ops::mul(t, 2.0);
  EXPECT_NE(error_of([&] {
              ops::view(doubled, {6});
            }).find("view size is not compatible with input tensor's size and stride"),
            std::string::npos);
  const Tensor flat = ops::reshape(doubled, {6});
  EXPECT_FALSE(shares_storage(flat, doubled));
  expect_values(flat, {0, 6, 2, 8, 4, 10});
  const Tensor copy = ops::clone(t);
  const Tensor reshaped = ops::reshape(copy, {6});
  EXPECT_FALSE(shares_storage(reshaped, copy));
  EXPECT_FALSE(reshaped.is_view());
  expect_values(reshaped, {0, 3, 1, 4, 2, 5});
  // contiguous() is clone(memory_format=contiguous): (2, 1).
  EXPECT_TRUE(ops::contiguous(t).is_contiguous());
}

// AccumulateGrad's layout contract: l = torch.randn(2, 3).t().requires_grad_(); (l * 2).sum()
// .backward(): l.grad.stride() == (1, 3); a contiguous leaf given a transposed gradient
// ((torch.randn(2, 3).t() * l).sum().backward()) gets (2, 1).
TEST(ElementwiseLayout, LeafGradientsFollowTheLayoutContract) {
  Tensor l = ops::t(arange({2, 3})).detach();
  l.set_requires_grad(true);
  backward({ops::sum(ops::mul(l, 2.0))});
  ASSERT_TRUE(l.grad().defined());
  EXPECT_EQ(l.grad().strides(), (Shape{1, 3}));
  expect_values(ops::contiguous(l.grad()), {2, 2, 2, 2, 2, 2});
  Tensor c = leaf(iota(6), {3, 2});
  backward({ops::sum(ops::mul(transposed(), c))});
  EXPECT_TRUE(c.grad().is_contiguous());
  expect_values(c.grad(), {0, 3, 1, 4, 2, 5});
}

}  // namespace
}  // namespace ag
