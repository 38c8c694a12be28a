#include "engine/describe_graph.h"

#include <gtest/gtest.h>

#include <sstream>

#include "engine/autograd.h"
#include "engine/forward_ad.h"
#include "engine/node.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::leaf;

// The text line that describes the node called `name` (the first one, newest first).
std::string line_of(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  #", 0) == 0 && line.find(" " + name + "  topo") != std::string::npos) {
      return line;
    }
  }
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

struct Graph {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor y = leaf({4, 5, 6}, {3});
  Tensor a = ops::mul(x, y);
  Tensor out = ops::add(ops::tanh(a), ops::exp(y));
};

TEST(DescribeGraph, ShowsNodesSavesAndWhatAGradCallWouldRun) {
  Graph g;
  // grad(out, {a}) with the topological cut only: a's node captures, add and tanh run, exp is
  // expanded (as tall as mul) but does not run, the accumulators lie below the cut.
  const std::string text =
      describe_graph({g.out}, {g.a}, EngineOptions().with_prune_by_reachability(false));
  SCOPED_TRACE(text);
  EXPECT_TRUE(has(line_of(text, "add"), "runs"));
  EXPECT_TRUE(has(line_of(text, "tanh"), "runs  saved: result float64[3] 24 B"));
  const std::string mul = line_of(text, "mul");
  EXPECT_TRUE(has(mul, "topo 1  captures input 0"));
  EXPECT_TRUE(has(mul, "saved: other float64[3] 24 B, self float64[3] 24 B"));
  EXPECT_TRUE(has(line_of(text, "exp"), "expanded"));
  EXPECT_TRUE(has(line_of(text, "AccumulateGrad"), "topo 0  cut"));
  EXPECT_TRUE(has(text, "6 node(s), 2 would run; 96 B saved"));
}

// Note [Hooks]: a node's hooks by kind, and which of them the call would run: all where the node
// runs, its tensor and retains-grad hooks where it only captures, none elsewhere.
TEST(DescribeGraph, ShowsHooksAndWhichWouldRun) {
  Graph g;
  const auto keep = [](const Tensor&) { return Tensor(); };
  g.a.register_hook(keep);
  g.a.retain_grad();
  g.a.grad_fn()->register_prehook([](const TensorList&) { return TensorList(); });
  g.x.register_hook(keep);
  const std::string captured = describe_graph({g.out}, {g.a});
  SCOPED_TRACE(captured);
  EXPECT_TRUE(has(line_of(captured, "mul"),
                  "captures input 0  saved: other float64[3] 24 B, self float64[3] 24 B  hooks: "
                  "1 tensor, 1 retains-grad, 1 pre (tensor hooks would run)"));
  EXPECT_TRUE(has(captured, "AccumulateGrad  topo 0  cut  hooks: 1 tensor (would not run)\n"));
  EXPECT_TRUE(has(captured, "96 B saved; 2 of 4 hook(s) would run\n"));
  const std::string runs = describe_graph({g.out}, {g.x});
  SCOPED_TRACE(runs);
  EXPECT_TRUE(has(line_of(runs, "mul"), "hooks: 1 tensor, 1 retains-grad, 1 pre (would run)"));
  EXPECT_TRUE(has(runs, "4 of 4 hook(s) would run\n"));
  EXPECT_TRUE(has(describe_graph_dot({g.out}, {g.a}), "\\nhooks: 1 tensor (would not run)"));
}

TEST(DescribeGraph, HeaderNamesTheOptionsThatAreOn) {
  Graph g;
  EXPECT_TRUE(
      has(describe_graph({g.out}, {g.a}, EngineOptions()),
          "options: topo_nr reachability per_call guard_saves skip_zero_products fuse_sums\n"));
  EXPECT_TRUE(has(describe_graph({g.out}, {g.a}, EngineOptions().with_prune_by_reachability(false)),
                  "options: topo_nr per_call guard_saves skip_zero_products fuse_sums\n"));
  EXPECT_TRUE(has(describe_graph({g.out}, {g.a}, EngineOptions::all_off()), "options: none\n"));
  EXPECT_EQ(to_string(EngineOptions::from_bits(4 | 16)), "per_call skip_zero_products");
}

TEST(DescribeGraph, AfterBackwardSavesShowAsReleased) {
  Graph g;
  const Tensor total = ops::sum(g.out);
  backward(total);
  const std::string text = describe_graph(total);
  SCOPED_TRACE(text);
  EXPECT_TRUE(has(line_of(text, "mul"), "saved: other released, self released"));
  EXPECT_TRUE(has(text, "0 B saved"));
}

TEST(DescribeGraph, DotMarksRunningTargetAndCutNodes) {
  Graph g;
  const std::string dot =
      describe_graph_dot({g.out}, {g.a}, EngineOptions().with_prune_by_reachability(false));
  EXPECT_EQ(dot.rfind("digraph autograd {", 0), 0u) << dot;
  EXPECT_TRUE(has(dot, "fillcolor")) << dot;     // add, tanh
  EXPECT_TRUE(has(dot, "penwidth=3")) << dot;    // mul, the requested input
  EXPECT_TRUE(has(dot, "style=dashed")) << dot;  // the accumulators
  EXPECT_TRUE(has(dot, " -> n")) << dot;         // edges, parent to child
}

// The lines under the node called `name`: its edges.
std::string edges_of(const std::string& text, const std::string& name) {
  const size_t at = text.find(line_of(text, name));
  const size_t end = text.find("\n  #", at + 1);
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// grad(out, {x}): mul's gradient for y is not needed. With per-call needs_input_grad the call does
// not compute it; without, mul computes both (y requires grad).
TEST(DescribeGraph, MarksTheGradientsACallDoesNotCompute) {
  Graph g;
  const std::string on = describe_graph({g.out}, {g.x}, EngineOptions());
  const std::string off =
      describe_graph({g.out}, {g.x}, EngineOptions().with_per_call_needs_input_grad(false));
  SCOPED_TRACE(on + off);
  const std::string y_edge = "-> #" + std::to_string(gradient_edge(g.y).function->sequence_nr());
  const std::string x_edge = "-> #" + std::to_string(gradient_edge(g.x).function->sequence_nr());
  const std::string mul_on = edges_of(on, "mul"), mul_off = edges_of(off, "mul");
  EXPECT_TRUE(has(mul_on, y_edge + " AccumulateGrad [0]  not computed"));
  EXPECT_TRUE(has(mul_on, x_edge + " AccumulateGrad [0]\n"));
  EXPECT_FALSE(has(mul_off, "not computed"));
  // exp does not run at all: its edge is not marked (only running nodes compute gradients).
  EXPECT_FALSE(has(edges_of(on, "exp"), "not computed"));

  const std::string dot = describe_graph_dot({g.out}, {g.x}, EngineOptions());
  EXPECT_TRUE(has(dot, "style=dotted")) << dot;
}

}  // namespace
}  // namespace ag

namespace ag {
namespace {

// Note [Forward mode]: the tangents an output and an input carry, one line each per level.
TEST(DescribeGraph, ShowsTangents) {
  DualLevel level;
  Tensor x = ops::from_vector({1, 2, 3}, {3}, DType::kFloat64);
  x.set_requires_grad(true);
  const Tensor d = make_dual(x, ops::ones({3}, DType::kFloat64));
  const Tensor y = ops::sum(ops::mul(d, d));
  const std::string text = describe_graph({y}, {d});
  EXPECT_NE(text.find("tangent: output 0 float64[] at level 0"), std::string::npos) << text;
  EXPECT_NE(text.find("tangent: input 0 float64[3] at level 0"), std::string::npos) << text;
  EXPECT_EQ(describe_graph({ops::sum(x)}).find("tangent:"), std::string::npos);
}

}  // namespace
}  // namespace ag
