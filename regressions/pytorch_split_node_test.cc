// split, chunk and unbind record one node for all their outputs, as PyTorch's SplitBackward0,
// SplitWithSizesBackward0 and UnbindBackward0 (Note [Several views, one node], ops/split.cc),
// pinned to PyTorch 2.15 (float64): the outputs share the node, a sibling output's hooks are
// handed None when the node runs, retained gradients, create_graph through the node,
// backward(inputs=[output]), and the errors after a write into the base or a sibling. The values
// and messages are those that regressions/pytorch_split_node_goldens.py prints; the comments give
// its programs. Before, each output had a node of its own (a slice or select).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/autograd.h"
#include "engine/forward_ad.h"
#include "engine/grad_mode.h"
#include "engine/node.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::leaf;
using testing::values;

const std::vector<double> kSix = {1, 2, 3, 4, 5, 6};

// What the hooks registered by `hooked` saw: (output, defined, values).
struct Fired {
  int output;
  bool defined;
  std::vector<double> grad;
};
void hooked(const Tensor& out, std::vector<Fired>* log, int output) {
  out.register_hook([log, output](const Tensor& g) {
    log->push_back({output, g.defined(), g.defined() ? g.to_vector() : std::vector<double>{}});
    return Tensor();
  });
}

// for o in (a.split(2), a.chunk(3), a.unbind(), (zeros(0, 3) * 1).chunk(2)):
//   [o.grad_fn.name()], [o.output_nr], all share o[0].grad_fn, all _is_view()
// -> SplitBackward0 [0, 1, 2]; SplitBackward0 [0, 1, 2]; UnbindBackward0 [0..5];
//    SplitWithSizesBackward0 [0, 1]; True, True. o[0].grad_fn.next_functions[0][0] is a.grad_fn.
// The engine names a node after its op: split, unbind, split_with_sizes.
TEST(SplitNode, OneNodeWithAnOutputPerView) {
  Tensor x = leaf(kSix, {6});
  Tensor a = ops::mul(x, 1.0);
  Tensor empty = ops::mul(leaf({}, {0, 3}), 1.0);
  const std::vector<std::pair<std::vector<Tensor>, std::string>> cases = {
      {ops::split(a, 2), "split"},
      {ops::chunk(a, 3), "split"},
      {ops::unbind(a), "unbind"},
      {ops::chunk(empty, 2), "split_with_sizes"}};
  const std::vector<size_t> sizes = {3, 3, 6, 2};
  for (size_t c = 0; c < cases.size(); ++c) {
    const auto& [outs, name] = cases[c];
    SCOPED_TRACE(name);
    ASSERT_EQ(outs.size(), sizes[c]);
    for (size_t k = 0; k < outs.size(); ++k) {
      ASSERT_NE(outs[k].grad_fn(), nullptr);
      EXPECT_EQ(outs[k].grad_fn(), outs[0].grad_fn());
      EXPECT_EQ(outs[k].output_nr(), k);
      EXPECT_TRUE(outs[k].is_view());
    }
    EXPECT_EQ(outs[0].grad_fn()->name(), name);
    EXPECT_EQ(outs[0].grad_fn()->num_inputs(), outs.size());
  }
  EXPECT_EQ(cases[0].first[0].grad_fn()->next_edge(0).function, a.grad_fn());
}

// o = (x * 1).split(2); hooks on o[0], o[1]; (o[0] * 3).sum().backward()
// -> [('h0', [3, 3]), ('h1', None)], x.grad [3, 3, 0, 0, 0, 0]
// o = (x * 1).unbind(); hooks on o[0], o[4]; grad(o[4] * 2, x)
// -> [0, 0, 0, 0, 2, 0], [('h0', None), ('h4', 2)]
TEST(SplitNode, ASiblingsHooksAreHandedNone) {
  {
    Tensor x = leaf(kSix, {6});
    std::vector<Tensor> o = ops::split(ops::mul(x, 1.0), 2);
    std::vector<Fired> log;
    hooked(o[0], &log, 0);
    hooked(o[1], &log, 1);
    backward(ops::sum(ops::mul(o[0], 3.0)));
    ASSERT_EQ(log.size(), 2u);
    EXPECT_EQ(log[0].output, 0);
    EXPECT_EQ(log[0].grad, std::vector<double>({3, 3}));
    EXPECT_EQ(log[1].output, 1);
    EXPECT_FALSE(log[1].defined);
    expect_values(x.grad(), {3, 3, 0, 0, 0, 0});
  }
  Tensor x = leaf(kSix, {6});
  std::vector<Tensor> o = ops::unbind(ops::mul(x, 1.0));
  std::vector<Fired> log;
  hooked(o[0], &log, 0);
  hooked(o[4], &log, 4);
  expect_values(grad({ops::mul(o[4], 2.0)}, {x})[0], {0, 0, 0, 0, 2, 0});
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].output, 0);
  EXPECT_FALSE(log[0].defined);
  EXPECT_EQ(log[1].output, 4);
  EXPECT_EQ(log[1].grad, std::vector<double>({2}));
}

// o = (x * 1).chunk(2); o[0].grad_fn.register_prehook(...); grad(o[1].sum(), x)
// -> [0, 0, 1, 1]; the pre-hook saw [None, [1, 1]]
TEST(SplitNode, APreHookSeesEveryOutputsGradient) {
  Tensor x = leaf({1, 2, 3, 4}, {4});
  std::vector<Tensor> o = ops::chunk(ops::mul(x, 1.0), 2);
  std::vector<TensorList> seen;
  o[0].grad_fn()->register_prehook([&seen](const TensorList& grads) {
    seen.push_back(grads);
    return TensorList();
  });
  expect_values(grad({ops::sum(o[1])}, {x})[0], {0, 0, 1, 1});
  ASSERT_EQ(seen.size(), 1u);
  ASSERT_EQ(seen[0].size(), 2u);
  EXPECT_FALSE(seen[0][0].defined());
  expect_values(seen[0][1], {1, 1});
}

// o = (x * 1).split(2); o[2].retain_grad(); (o[0] * 3).sum().backward(retain_graph=True)
// -> o[2].grad None; (o[2] * 5).sum().backward() -> o[2].grad [5, 5], x.grad [3, 3, 0, 0, 5, 5]
TEST(SplitNode, ARetainingSiblingKeepsNoGradientWhenItGetsNone) {
  Tensor x = leaf(kSix, {6});
  std::vector<Tensor> o = ops::split(ops::mul(x, 1.0), 2);
  o[2].retain_grad();
  backward(ops::sum(ops::mul(o[0], 3.0)), BackwardArgs().retain_graph());
  EXPECT_FALSE(o[2].grad().defined());
  backward(ops::sum(ops::mul(o[2], 5.0)));
  expect_values(o[2].grad(), {5, 5});
  expect_values(x.grad(), {3, 3, 0, 0, 5, 5});
}

// o = (x * x).unbind(); g, = grad(o[1] * o[2], x, create_graph=True)
// -> [0, 36, 24, 0, 0, 0], requires grad; grad(g.sum(), x) -> [0, 42, 32, 0, 0, 0]
TEST(SplitNode, DifferentiableAgain) {
  Tensor x = leaf(kSix, {6});
  std::vector<Tensor> o = ops::unbind(ops::mul(x, x));
  Tensor g = grad({ops::mul(o[1], o[2])}, {x}, GradArgs().create_graph())[0];
  expect_values(g, {0, 36, 24, 0, 0, 0});
  EXPECT_TRUE(g.requires_grad());
  expect_values(grad({ops::sum(g)}, {x})[0], {0, 42, 32, 0, 0, 0});
}

// o = (x * 2).split(2); hooks on o[0], o[1]; (o[1] * 3).sum().backward(inputs=[o[1]])
// -> o[1].grad [3, 3], [('h0', None), ('h1', [3, 3])], x.grad None. (PyTorch also runs o[1]'s
// own node there, issue 92331; the engine only captures at it, which runs its tensors' hooks
// the same way: Note [Hooks], engine/hooks.h.)
TEST(SplitNode, BackwardIntoOneOutput) {
  Tensor x = leaf(kSix, {6});
  std::vector<Tensor> o = ops::split(ops::mul(x, 2.0), 2);
  std::vector<Fired> log;
  hooked(o[0], &log, 0);
  hooked(o[1], &log, 1);
  backward(ops::sum(ops::mul(o[1], 3.0)), BackwardArgs().inputs({o[1]}));
  expect_values(o[1].grad(), {3, 3});
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].output, 0);
  EXPECT_FALSE(log[0].defined);
  EXPECT_EQ(log[1].output, 1);
  EXPECT_EQ(log[1].grad, std::vector<double>({3, 3}));
  EXPECT_FALSE(x.grad().defined());
}

// a = x * 1; o = a.split(2); o[1].mul_(2) -> "Output 1 of Split is a view and is being modified
// inplace."; a.mul_(2); o[1].grad_fn -> "Output 1 of Split is a view and its base or another view
// of its base has been modified inplace."
// o = (x * 1).unbind(); with no_grad: o[0].mul_(2); o[3].grad_fn -> "Output 3 of Unbind is a view
// and its base or another view of its base has been modified inplace."; o[0] 2, o[3] 4.
TEST(SplitNode, WritesNameTheOutputOfTheNode) {
  Tensor x = leaf({1, 2, 3, 4}, {4});
  Tensor a = ops::mul(x, 1.0);
  std::vector<Tensor> o = ops::split(a, 2);
  expect_error([&] { ops::mul_(o[1], values({2}, {})); },
               {"output 1 of 'split'", "is being modified in place", "split, chunk or unbind"});
  ops::mul_(a, values({2}, {}));
  expect_error([&] { (void)o[1].grad_fn(); },
               {"output 1 of 'split'", "its base or another view of its base has been modified"});

  Tensor y = leaf({1, 2, 3, 4}, {4});
  std::vector<Tensor> rows = ops::unbind(ops::mul(y, 1.0));
  {
    NoGradGuard no_grad;
    ops::mul_(rows[0], values({2}, {}));
  }
  expect_error([&] { (void)rows[3].grad_fn(); },
               {"output 3 of 'unbind'", "its base or another view of its base has been modified"});
  expect_values(rows[0], {2});
  expect_values(rows[3], {4});
}

// with dual_level(): tangent = [.5, -1, 2, 4]; d = make_dual([1, 2, 3, 4], tangent); o = d.split(2)
// -> tangents [[.5, -1], [2, 4]]; of d.unbind(): [.5, -1, 2, 4]; o[1].mul_(3): d's tangent (and
// tangent itself) [.5, -1, 6, 12]. make_dual(x, ones).chunk(2), x a leaf: SplitBackward0,
// tangents [[1, 1], [1, 1]].
TEST(SplitNode, EachOutputsTangentIsAViewOfTheInputs) {
  DualLevel level;
  const Tensor tangent = values({.5, -1, 2, 4}, {4});
  const Tensor d = make_dual(values({1, 2, 3, 4}, {4}), tangent);
  std::vector<Tensor> o = ops::split(d, 2);
  expect_values(unpack_dual(o[0]).tangent, {.5, -1});
  expect_values(unpack_dual(o[1]).tangent, {2, 4});
  std::vector<Tensor> rows = ops::unbind(d);
  for (size_t k = 0; k < rows.size(); ++k) {
    expect_values(unpack_dual(rows[k]).tangent, {tangent.to_vector()[k]});
  }
  ops::mul_(o[1], values({3}, {}));
  expect_values(unpack_dual(d).tangent, {.5, -1, 6, 12});
  expect_values(tangent, {.5, -1, 6, 12});
  Tensor x = leaf({1, 2, 3, 4}, {4});
  std::vector<Tensor> halves = ops::chunk(make_dual(x, values({1, 1, 1, 1}, {4})), 2);
  ASSERT_NE(halves[0].grad_fn(), nullptr);
  EXPECT_EQ(halves[0].grad_fn()->name(), "split");
  expect_values(unpack_dual(halves[0]).tangent, {1, 1});
  expect_values(unpack_dual(halves[1]).tangent, {1, 1});
}

}  // namespace
}  // namespace ag
