// Note [Common subexpressions]: which nodes the pass merges and which it leaves, and that the
// merged graph computes what the traced program computed, bit for bit.
#include "engine/jit/common_subexpressions.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "engine/jit/executor.h"
#include "engine/jit/fold_zeros.h"
#include "engine/jit/ir_parser.h"
#include "engine/jit/tracer.h"
#include "ops/ops.h"

namespace ag::jit {
namespace {

using Program = std::function<TensorList(const TensorList&)>;

struct Traced {
  std::unique_ptr<Graph> graph;
  std::vector<std::optional<TensorMeta>> metas;
};

Traced traceOf(const Program& program, const TensorList& inputs) {
  Traced t;
  TracingScope scope(inputs);
  t.graph = scope.finish(program(inputs), &t.metas);
  return t;
}

int countNodes(const Graph& g, const std::string& kind) {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->kind() == kind;
  return n;
}

// {x [3, 4], w [4, 4], d [3, 4] of float64}
TensorList someInputs(uint64_t seed) {
  return {ops::uniform({3, 4}, -1, 1, seed), ops::uniform({4, 4}, -1, 1, seed + 1),
          ops::uniform({3, 4}, -1, 1, seed + 2, DType::kFloat64)};
}

// Merges, drops the dead, and checks that the graph still computes what the program does, in the
// same bits, on other inputs. Returns the number merged.
int64_t mergeAndCheck(Traced& t, const Program& program) {
  const int64_t merged = eliminateCommonSubexpressions(*t.graph, t.metas);
  eliminateDeadCode(*t.graph);
  const TensorList other = someInputs(7);
  const TensorList got = GraphExecutor(*t.graph).run(other), want = program(other);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    EXPECT_EQ(toString(got[i]), toString(want[i])) << "output " << i;
  }
  return merged;
}

TEST(CommonSubexpressionsTest, TheSameOpOnTheSameValuesIsComputedOnce) {
  const Program program = [](const TensorList& in) {
    Tensor a = ops::mm(in[0], in[1]), b = ops::mm(in[0], in[1]);
    return TensorList{ops::add(ops::tanh(a), ops::tanh(b))};
  };
  Traced t = traceOf(program, someInputs(1));
  EXPECT_EQ(countNodes(*t.graph, "aten::mm"), 2);
  // The second mm first, then the second tanh, which reads the first mm now.
  EXPECT_EQ(mergeAndCheck(t, program), 2);
  EXPECT_EQ(countNodes(*t.graph, "aten::mm"), 1);
  EXPECT_EQ(countNodes(*t.graph, "aten::tanh"), 1);
}

TEST(CommonSubexpressionsTest, OtherAttributesOrOtherInputsAreOtherValues) {
  const Program program = [](const TensorList& in) {
    const Tensor& w = in[1];
    return TensorList{
        ops::add(ops::mm(in[0], w), ops::mm(in[0], ops::transpose(w, 0, 1))),
        ops::add(ops::mul(in[0], 2.0), ops::mul(in[0], 3.0)),
        ops::add(ops::sub(in[0], ops::tanh(in[0])), ops::sub(ops::tanh(in[0]), in[0]))};
  };
  Traced t = traceOf(program, someInputs(1));
  // Only the second tanh(in[0]) repeats a computation.
  EXPECT_EQ(mergeAndCheck(t, program), 1);
  EXPECT_EQ(countNodes(*t.graph, "aten::mm"), 2);
  EXPECT_EQ(countNodes(*t.graph, "aten::mul_scalar"), 2);
  EXPECT_EQ(countNodes(*t.graph, "aten::sub"), 2);
}

// The seed of a second grad (ones_like) and of a backward through a sum (broadcast_to of a
// scalar one) hold the same elements; so does every op that then reads them alike.
TEST(CommonSubexpressionsTest, FillsOfOneValueAndShapeAreOneValue) {
  const Program program = [](const TensorList& in) {
    const Tensor a = ops::mm(in[0], in[1]);
    const Tensor seed = ops::ones_like(a);
    const Tensor broadcast = ops::broadcast_to(ops::ones_like(ops::sum(a)), a.shape());
    return TensorList{ops::add(ops::mm(seed, in[1]), ops::mm(broadcast, in[1])),
                      ops::add(ops::zeros_like(a), ops::zeros_like(in[0]))};
  };
  Traced t = traceOf(program, someInputs(1));
  // broadcast_to's fill (ones [3, 4]) is the first ones_like's, its mm the first mm's; the second
  // zeros_like [3, 4] is the first's. ones_like of the scalar sum (a [] fill) is left alone.
  EXPECT_EQ(mergeAndCheck(t, program), 3);
  EXPECT_EQ(countNodes(*t.graph, "aten::broadcast_to"), 0);
  EXPECT_EQ(countNodes(*t.graph, "aten::ones_like"), 1);
  EXPECT_EQ(countNodes(*t.graph, "aten::zeros_like"), 1);
  EXPECT_EQ(countNodes(*t.graph, "aten::mm"), 2);
}

TEST(CommonSubexpressionsTest, FillsOfOtherValuesShapesOrDtypesStayApart) {
  const Program program = [](const TensorList& in) {
    const Tensor fills[] = {ops::ones_like(in[0]), ops::zeros_like(in[0]), ops::ones_like(in[1]),
                            ops::ones_like(in[2]),
                            ops::broadcast_to(ops::ones_like(ops::sum(in[0])), {4, 3})};
    TensorList out;
    for (const Tensor& f : fills) out.push_back(ops::mul(f, 2.0));  // the fills are not outputs
    return out;
  };
  Traced t = traceOf(program, someInputs(1));
  // ones f32[3, 4], zeros f32[3, 4], ones f32[4, 4], ones f64[3, 4], ones f32[] and f32[4, 3]
  EXPECT_EQ(mergeAndCheck(t, program), 0);
  EXPECT_EQ(countNodes(*t.graph, "aten::ones_like"), 4);
  EXPECT_EQ(countNodes(*t.graph, "aten::broadcast_to"), 1);
}

TEST(CommonSubexpressionsTest, TwoOutputsKeepTheirOwnTensorsAndOneOutputTakesTheEarlierValue) {
  const Program program = [](const TensorList& in) {
    const Tensor inner = ops::tanh(in[0]);
    return TensorList{ops::tanh(in[1]), ops::tanh(in[1]), ops::exp(inner), ops::tanh(in[0])};
  };
  Traced t = traceOf(program, someInputs(1));
  // tanh(in[1]) twice, both outputs: both stay. The last tanh(in[0]) is an output; the first is
  // not: the output is the first's value.
  EXPECT_EQ(mergeAndCheck(t, program), 1);
  EXPECT_EQ(countNodes(*t.graph, "aten::tanh"), 3);
  const TensorList got = GraphExecutor(*t.graph).run(someInputs(3));
  EXPECT_NE(got[0].impl().get(), got[1].impl().get());
}

TEST(CommonSubexpressionsTest, GraphsThatWriteInPlaceAreLeftAlone) {
  const Program program = [](const TensorList& in) {
    Tensor a = ops::mul(in[0], in[0]), b = ops::mul(in[0], in[0]);
    ops::add_(a, in[0]);  // a and b differ from here on
    return TensorList{ops::add(a, b)};
  };
  Traced t = traceOf(program, someInputs(1));
  EXPECT_EQ(mergeAndCheck(t, program), 0);
  EXPECT_EQ(countNodes(*t.graph, "aten::mul"), 2);
}

TEST(CommonSubexpressionsTest, SideEffectsAreNotMerged) {
  auto g = parseGraph(R"IR(
graph(%x : Tensor):
  prim::Print(%x)
  prim::Print(%x)
  %a : Tensor = aten::neg(%x)
  %b : Tensor = aten::neg(%x)
  %c : Tensor = aten::add(%a, %b)
  return (%c)
)IR");
  EXPECT_EQ(eliminateCommonSubexpressions(*g, {}), 1);  // the second neg
  EXPECT_EQ(countNodes(*g, "prim::Print"), 2);
  EXPECT_EQ(countNodes(*g, "aten::neg"), 1);
}

}  // namespace
}  // namespace ag::jit
