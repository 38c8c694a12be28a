// Note [Common subexpressions], one condition at a time: two nodes are merged only when they are
// the same op with the same attributes on the same input values in the same order, or fills of
// the same value, shape and dtype; never ops with side effects, list ops, two graph outputs, or
// anything in a graph that writes in place or holds a group. Each case is the pair on one side of
// one condition, the merged graph run on other inputs against the eager program.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "engine/jit/common_subexpressions.h"
#include "engine/jit/executor.h"
#include "engine/jit/fold_zeros.h"
#include "engine/jit/ir_parser.h"
#include "engine/jit/tracer.h"
#include "ops/ops.h"

namespace ag::jit {
namespace {

using Program = std::function<TensorList(const TensorList&)>;

// a [4, 4], b [4, 4], c [3, 4], s [] (a scalar), all float64.
TensorList inputs(uint64_t seed) {
  return {ops::uniform({4, 4}, -1, 1, seed, DType::kFloat64),
          ops::uniform({4, 4}, -1, 1, seed + 1, DType::kFloat64),
          ops::uniform({3, 4}, -1, 1, seed + 2, DType::kFloat64),
          ops::uniform({}, -1, 1, seed + 3, DType::kFloat64)};
}
enum { A, B, C, S };

int countNodes(const Graph& g, const std::string& kind) {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->kind() == kind;
  return n;
}

// Traces, merges, drops the dead, and checks the graph against the program on other inputs, bit
// for bit. Returns the number merged.
int64_t mergeAndCheck(const std::string& name, const Program& program) {
  SCOPED_TRACE(name);
  std::vector<std::optional<TensorMeta>> metas;
  std::unique_ptr<Graph> graph;
  {
    const TensorList in = inputs(1);
    TracingScope scope(in);
    graph = scope.finish(program(in), &metas);
  }
  const int64_t merged = eliminateCommonSubexpressions(*graph, metas);
  eliminateDeadCode(*graph);
  const TensorList other = inputs(11);
  const TensorList got = GraphExecutor(*graph).run(other), want = program(other);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    EXPECT_EQ(toString(got[i]), toString(want[i])) << "output " << i;
  }
  return merged;
}

// Each program computes two candidates p and q and returns f(p) - g(q) with f, g distinct ops, so
// that neither candidate is a graph output and a wrong merge changes the value.
TensorList differenceOf(const Tensor& p, const Tensor& q) {
  return {ops::sub(ops::tanh(p), ops::exp(q))};
}

TEST(CommonSubexpressionConditions, TheSameOpOnTheSameInputsInTheSameOrderIsMerged) {
  EXPECT_EQ(mergeAndCheck("mm(a, b) twice",
                          [](const TensorList& in) {
                            return differenceOf(ops::mm(in[A], in[B]), ops::mm(in[A], in[B]));
                          }),
            1);
}

TEST(CommonSubexpressionConditions, InputsInAnotherOrderAreAnotherValue) {
  EXPECT_EQ(mergeAndCheck("mm(a, b), mm(b, a)",
                          [](const TensorList& in) {
                            return differenceOf(ops::mm(in[A], in[B]), ops::mm(in[B], in[A]));
                          }),
            0);
  EXPECT_EQ(mergeAndCheck("div(a, b), div(b, a)",
                          [](const TensorList& in) {
                            return differenceOf(ops::div(in[A], in[B]), ops::div(in[B], in[A]));
                          }),
            0);
  // One input the same, the other not.
  EXPECT_EQ(mergeAndCheck("mul(a, b), mul(a, a)",
                          [](const TensorList& in) {
                            return differenceOf(ops::mul(in[A], in[B]), ops::mul(in[A], in[A]));
                          }),
            0);
}

TEST(CommonSubexpressionConditions, AnotherOpOnTheSameInputsIsAnotherValue) {
  EXPECT_EQ(mergeAndCheck("add(a, b), mul(a, b)",
                          [](const TensorList& in) {
                            return differenceOf(ops::add(in[A], in[B]), ops::mul(in[A], in[B]));
                          }),
            0);
}

TEST(CommonSubexpressionConditions, EachAttributeThatDiffersKeepsTwoValues) {
  struct Case {
    const char* name;
    Program program;
  };
  const Case cases[] = {
      {"sum dim 0, dim 1",
       [](const TensorList& in) { return differenceOf(ops::sum(in[A], 0), ops::sum(in[A], 1)); }},
      {"sum keepdim, not",
       [](const TensorList& in) {
         return differenceOf(ops::reshape(ops::sum(in[A], 0, true), {4}), ops::sum(in[A], 0));
       }},
      {"reshape [16], [2, 8]",
       [](const TensorList& in) {
         return differenceOf(ops::reshape(in[A], {16}),
                             ops::reshape(ops::reshape(in[A], {2, 8}), {16}));
       }},
      {"sum_to [4], [4, 1]",
       [](const TensorList& in) {
         return differenceOf(ops::sum_to(in[A], {4}),
                             ops::reshape(ops::sum_to(in[A], {4, 1}), {4}));
       }},
      {"mul by 2, by 3",
       [](const TensorList& in) {
         return differenceOf(ops::mul(in[A], 2.0), ops::mul(in[A], 3.0));
       }},
      {"two captured constants",
       [](const TensorList& in) {
         static const Tensor k1 = ops::full({4, 4}, 2.0, DType::kFloat64);
         static const Tensor k2 = ops::full({4, 4}, 3.0, DType::kFloat64);
         return differenceOf(ops::mul(in[A], k1), ops::mul(in[A], k2));
       }},
  };
  for (const Case& c : cases) EXPECT_EQ(mergeAndCheck(c.name, c.program), 0) << c.name;
  // The same attributes do merge.
  EXPECT_EQ(mergeAndCheck("sum dim 1 twice",
                          [](const TensorList& in) {
                            return differenceOf(ops::sum(in[A], 1), ops::sum(in[A], 1));
                          }),
            1);
}

// The pass finds candidates by a hash of the op and its input ids (kind * 31^2 + id1 * 31 + id2
// for two inputs), so mul(x1, x40) and mul(x2, x9) meet in one bucket: only the comparison of
// their inputs keeps them apart.
TEST(CommonSubexpressionConditions, InputsWhoseIdsCollideInTheHashAreStillCompared) {
  std::string text = "graph(";
  for (int i = 0; i <= 40; ++i) text += (i ? ", %x" : "%x") + std::to_string(i) + " : Tensor";
  text += R"IR():
  %p : Tensor = aten::mul(%x1, %x40)
  %q : Tensor = aten::mul(%x2, %x9)
  %r : Tensor = aten::sub(%p, %q)
  return (%r)
)IR";
  auto g = parseGraph(text);
  const auto& in = g->inputs();
  ASSERT_EQ(in[1]->id() * 31 + in[40]->id(), in[2]->id() * 31 + in[9]->id())
      << "the test needs the two products' input ids to collide in the hash";
  EXPECT_EQ(eliminateCommonSubexpressions(*g, {}), 0);
  EXPECT_EQ(countNodes(*g, "aten::mul"), 2);
  TensorList args;
  for (int i = 0; i <= 40; ++i) args.push_back(ops::uniform({3}, -1, 1, 100 + i, DType::kFloat64));
  const Tensor want = ops::sub(ops::mul(args[1], args[40]), ops::mul(args[2], args[9]));
  EXPECT_EQ(toString(GraphExecutor(*g).run(args)[0]), toString(want));
}

// Fills hold one value whatever their input holds: ones_like of two different tensors of one
// shape and dtype are one value; of another value, shape or dtype they are not; and broadcast_to
// is a fill only of a fill.
TEST(CommonSubexpressionConditions, FillsMergeOnlyOnValueShapeAndDtype) {
  EXPECT_EQ(mergeAndCheck("ones_like(a), ones_like(b)",
                          [](const TensorList& in) {
                            return differenceOf(ops::ones_like(in[A]), ops::ones_like(in[B]));
                          }),
            1);
  EXPECT_EQ(mergeAndCheck("ones_like(a), zeros_like(b)",
                          [](const TensorList& in) {
                            return differenceOf(ops::ones_like(in[A]), ops::zeros_like(in[B]));
                          }),
            0);
  EXPECT_EQ(mergeAndCheck("ones_like(a) [4, 4], ones_like(c) [3, 4] summed to [4]",
                          [](const TensorList& in) {
                            return differenceOf(ops::sum(ops::ones_like(in[A]), 0),
                                                ops::sum(ops::ones_like(in[C]), 0));
                          }),
            0);
  EXPECT_EQ(
      mergeAndCheck(
          "ones_like(a) f64, ones_like(a as f32)",
          [](const TensorList& in) {
            static const Tensor f32 = ops::uniform({4, 4}, -1, 1, 5);
            return TensorList{ops::tanh(ops::ones_like(in[A])), ops::exp(ops::ones_like(f32))};
          }),
      0);
  // broadcast_to of a fill is the fill of its shape; of a value that is no fill it is not.
  EXPECT_EQ(mergeAndCheck("broadcast_to(ones_like(s)), ones_like(a)",
                          [](const TensorList& in) {
                            return differenceOf(ops::broadcast_to(ops::ones_like(in[S]), {4, 4}),
                                                ops::ones_like(in[A]));
                          }),
            1);
  EXPECT_EQ(mergeAndCheck("broadcast_to(zeros_like(s)), ones_like(a)",
                          [](const TensorList& in) {
                            return differenceOf(ops::broadcast_to(ops::zeros_like(in[S]), {4, 4}),
                                                ops::ones_like(in[A]));
                          }),
            0);
  EXPECT_EQ(
      mergeAndCheck("broadcast_to(s), ones_like(a)",
                    [](const TensorList& in) {
                      return differenceOf(ops::broadcast_to(in[S], {4, 4}), ops::ones_like(in[A]));
                    }),
      0);
  EXPECT_EQ(mergeAndCheck("broadcast_to(tanh(s)), broadcast_to(exp(s))",
                          [](const TensorList& in) {
                            return differenceOf(ops::broadcast_to(ops::tanh(in[S]), {4, 4}),
                                                ops::broadcast_to(ops::exp(in[S]), {4, 4}));
                          }),
            0);
}

// Two equal values that are both graph outputs stay two tensors; one output and one inner value
// merge into the earlier.
TEST(CommonSubexpressionConditions, OnlyAPairOfGraphOutputsIsKeptApart) {
  EXPECT_EQ(mergeAndCheck("tanh(a) twice, both outputs",
                          [](const TensorList& in) {
                            return TensorList{ops::tanh(in[A]), ops::tanh(in[A])};
                          }),
            0);
  EXPECT_EQ(mergeAndCheck("tanh(a) twice, the second an output",
                          [](const TensorList& in) {
                            return TensorList{ops::exp(ops::tanh(in[A])), ops::tanh(in[A])};
                          }),
            1);
  EXPECT_EQ(mergeAndCheck("tanh(a) twice, the first an output",
                          [](const TensorList& in) {
                            const Tensor first = ops::tanh(in[A]);
                            return TensorList{first, ops::exp(ops::tanh(in[A]))};
                          }),
            1);
}

// List ops are not merged: two lists of the same values are two lists.
TEST(CommonSubexpressionConditions, ListOpsAreNotMerged) {
  auto g = parseGraph(R"IR(
graph(%x : Tensor, %y : Tensor):
  %l1 : Tensor[] = prim::ListConstruct(%x, %y)
  %l2 : Tensor[] = prim::ListConstruct(%x, %y)
  %a : Tensor, %b : Tensor = prim::ListUnpack(%l1)
  %c : Tensor, %d : Tensor = prim::ListUnpack(%l2)
  %e : Tensor = aten::mul(%a, %d)
  %f : Tensor = aten::mul(%c, %b)
  %r : Tensor = aten::sub(%e, %f)
  return (%r)
)IR");
  EXPECT_EQ(eliminateCommonSubexpressions(*g, {}), 0);
  EXPECT_EQ(countNodes(*g, "prim::ListConstruct"), 2);
  EXPECT_EQ(countNodes(*g, "prim::ListUnpack"), 2);
  EXPECT_EQ(countNodes(*g, "aten::mul"), 2);
}

// A group may write in place (Note [Structural zeros]): a graph that holds one merges nothing,
// not even outside the group.
TEST(CommonSubexpressionConditions, AGraphWithAGroupMergesNothing) {
  auto g = parseGraph(R"IR(
graph(%x : Tensor, %y : Tensor):
  %a : Tensor = prim::DifferentiableGraph(%x, %y) {
    graph(%p : Tensor, %q : Tensor):
      %m : Tensor = aten::mul(%p, %q)
      return (%m)
  }
  %b : Tensor = aten::neg(%x)
  %c : Tensor = aten::neg(%x)
  %d : Tensor = aten::add(%b, %c)
  %e : Tensor = aten::add(%a, %d)
  return (%e)
)IR");
  EXPECT_EQ(eliminateCommonSubexpressions(*g, {}), 0);
  EXPECT_EQ(countNodes(*g, "aten::neg"), 2);
}

}  // namespace
}  // namespace ag::jit
