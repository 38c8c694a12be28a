#include "engine/jit/executor.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/jit/create_autodiff_subgraphs.h"
#include "engine/jit/ir_parser.h"
#include "engine/jit/tracer.h"
#include "engine/memory/allocator.h"
#include "engine/options.h"
#include "ops/ops.h"

namespace ag::jit {
namespace {

Tensor t23() { return ops::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}); }
bool sharesStorage(const Tensor& a, const Tensor& b) { return a.shares_storage_with(b); }
const Tensor& tensorOf(const IValue& v) { return std::get<Tensor>(v); }

// `program` traced on `example`, its differentiable ops grouped with groups of any size; the
// number of groups the pass made goes to `groups` if given.
std::unique_ptr<Graph> tracedInGroups(const std::function<TensorList(const TensorList&)>& program,
                                      const TensorList& example, size_t* groups = nullptr) {
  auto g = trace(program, example);
  AutodiffSubgraphOptions options;
  options.min_subgraph_size = 1;
  const size_t made = createAutodiffSubgraphs(*g, options).groups;
  if (groups != nullptr) *groups = made;
  return g;
}

TEST(ExecutorTest, ViewsShareStorageWithTheirBase) {
  auto g = parseGraph(R"IR(graph(%x : Tensor, %y : Tensor):
  %r : Tensor = aten::reshape[shape=[3, 2]](%x)
  %w : Tensor = aten::add_(%r, %y)
  %t : Tensor = aten::transpose[dim0=0, dim1=1](%x)
  return (%t, %w)
)IR");
  Tensor x = t23();
  auto out = runGraph(*g, {x, ops::from_vector({10, 20}, {2})});
  // x was written through its reshape view.
  EXPECT_EQ(toString(x), "tensor[2, 3]{11, 22, 13, 24, 15, 26}");
  EXPECT_EQ(toString(out[0]), "tensor[3, 2]{11, 24, 22, 15, 13, 26}");
  EXPECT_EQ(toString(out[1]), "tensor[3, 2]{11, 22, 13, 24, 15, 26}");
  EXPECT_TRUE(sharesStorage(tensorOf(out[1]), x));
  EXPECT_TRUE(sharesStorage(tensorOf(out[0]), x));  // transpose is a view, as PyTorch's
  EXPECT_EQ(tensorOf(out[0]).strides(), (Shape{1, 3}));
}

TEST(ExecutorTest, ElementwiseOpsBroadcast) {
  auto g = parseGraph(R"IR(graph(%x : Tensor, %y : Tensor):
  %a : Tensor = aten::add(%x, %y)
  %m : Tensor = aten::mul(%x, %y)
  %s : Tensor = aten::sum(%a)
  %r : Tensor = aten::relu(%s)
  %d : Tensor = aten::mul_scalar[scalar=2.0](%r)
  return (%a, %m, %d)
)IR");
  auto out = runGraph(*g, {t23(), ops::from_vector({1, 0, -1}, {3})});
  EXPECT_EQ(toString(out[0]), "tensor[2, 3]{2, 2, 2, 5, 5, 5}");
  EXPECT_EQ(toString(out[1]), "tensor[2, 3]{1, 0, -3, 4, 0, -6}");
  EXPECT_EQ(toString(out[2]), "tensor[]{42}");
}

TEST(ExecutorTest, ListsHoldTheSameTensors) {
  auto g = parseGraph(R"IR(graph(%x : Tensor, %y : Tensor):
  %l : Tensor[] = prim::ListConstruct(%x, %y)
  %a : Tensor, %b : Tensor = prim::ListUnpack(%l)
  %w : Tensor = aten::mul_(%b, %a)
  prim::Print(%w)
  return (%w)
)IR");
  Tensor y = ops::from_vector({2, 2, 2}, {1, 3});
  PrintLog log;
  RunOptions options;
  options.log = &log;
  auto out = runGraph(*g, {ops::from_vector({1, 2, 3}, {1, 3}), y}, options);
  EXPECT_EQ(toString(y), "tensor[1, 3]{2, 4, 6}");
  EXPECT_TRUE(tensorOf(out[0]).is_same(y));  // mul_ returns the tensor it wrote
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "tensor[1, 3]{2, 4, 6}");
}

TEST(ExecutorTest, BadShapesAndInputsThrow) {
  auto g = parseGraph(R"IR(graph(%x : Tensor, %y : Tensor):
  %a : Tensor = aten::add(%x, %y)
  return (%a)
)IR");
  EXPECT_THROW(runGraph(*g, {t23(), ops::from_vector({1, 2}, {2})}), Error);
  EXPECT_THROW(runGraph(*g, {t23()}), IrError);
  EXPECT_THROW(runGraph(*g, {t23(), 1.0}), IrError);
  auto inplace = parseGraph(R"IR(graph(%x : Tensor, %y : Tensor):
  %a : Tensor = aten::add_(%x, %y)
  return (%a)
)IR");
  Tensor x = ops::from_vector({1, 2, 3}, {3});
  EXPECT_THROW(runGraph(*inplace, {x, t23()}), Error);
  EXPECT_EQ(toString(x), "tensor[3]{1, 2, 3}");  // the failed op wrote nothing
  EXPECT_EQ(toString(runGraph(*inplace, {x, x})[0]), "tensor[3]{2, 4, 6}");  // still usable
}

// The hessian workload's shape of program: an MLP forward with a loss.
TensorList mlp(const TensorList& in) {
  Tensor h = ops::tanh(ops::addmm(in[2], in[0], in[1]));
  Tensor y = ops::mul(h, h);
  return {ops::sum(ops::sigmoid(y))};
}

TensorList mlpInputs(bool requires_grad) {
  Tensor x = ops::uniform({4, 3}, -1, 1, 1);
  Tensor w = ops::uniform({3, 5}, -1, 1, 2);
  Tensor b = ops::uniform({5}, -1, 1, 3);
  if (requires_grad) {
    x.set_requires_grad(true);
    w.set_requires_grad(true);
  }
  return {x, w, b};
}

std::vector<std::vector<double>> valuesOf(const TensorList& ts) {
  std::vector<std::vector<double>> out;
  for (const Tensor& t : ts) out.push_back(t.defined() ? t.to_vector() : std::vector<double>{});
  return out;
}

TEST(TracerTest, RecordsTheOpsOfOrdinaryEngineCode) {
  auto g = trace(mlp, mlpInputs(false));
  const std::string text = toString(*g);
  EXPECT_NE(text.find("aten::addmm"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::tanh"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::sigmoid"), std::string::npos) << text;
  EXPECT_EQ(g->nodes().size(), 5u) << text;  // addmm, tanh, mul, sigmoid, sum
  // Replaying it on other inputs computes what eager does, bit for bit.
  TensorList other = mlpInputs(false);
  other[0] = ops::uniform({4, 3}, -2, 2, 9);
  EXPECT_EQ(valuesOf(GraphExecutor(*g).run(other)), valuesOf(mlp(other)));
}

TEST(TracerTest, RecordsViewsInPlaceOpsAndConstants) {
  Tensor c = ops::from_vector({0.5, -1, 2}, {3});
  auto program = [&](const TensorList& in) -> TensorList {
    Tensor a = ops::exp(in[0]);
    Tensor v = ops::reshape(a, {3, 2});
    ops::add_(v, c.defined() ? ops::reshape(ops::mul(c, 1.0), {3, 1}) : c);
    return {a, v, ops::transpose(v, 0, 1)};
  };
  auto g = trace(program, {t23()});
  const std::string text = toString(*g);
  EXPECT_NE(text.find("prim::Constant"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::add_"), std::string::npos) << text;
  Tensor x = ops::from_vector({0, 1, -1, 0.5, 2, 3}, {2, 3});
  auto out = GraphExecutor(*g).run(TensorList{x});
  // a was written through its view: the returned a sees the write, as in eager.
  EXPECT_EQ(valuesOf(out), valuesOf(program({x})));
  EXPECT_TRUE(sharesStorage(out[0], out[1]));
  EXPECT_TRUE(sharesStorage(out[0], out[2]));  // a transposed view of the view
}

TEST(TracerTest, RefusesAliasedInputs) {
  Tensor x = t23();
  EXPECT_THROW(trace(mlp, {x, x.detach(), x}), Error);
}

// Traced MLP → create_autodiff_subgraphs → executor: one autograd node for the group.
struct Compiled {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<GraphExecutor> exec;
};
Compiled compiledMlp() {
  Compiled c;
  c.graph = trace(mlp, mlpInputs(false));
  createAutodiffSubgraphs(*c.graph);
  c.exec = std::make_unique<GraphExecutor>(*c.graph);
  return c;
}

TEST(DifferentiableGraphTest, RunsAsOneAutogradNodeWithEagerGradients) {
  Compiled c = compiledMlp();
  ASSERT_NE(toString(*c.graph).find("prim::DifferentiableGraph"), std::string::npos);
  TensorList in = mlpInputs(true);
  Tensor loss = c.exec->run(in)[0];
  ASSERT_NE(loss.grad_fn(), nullptr);
  EXPECT_EQ(loss.grad_fn()->name(), "DifferentiableGraphBackward");
  TensorList eager_in = mlpInputs(true);
  Tensor eager_loss = mlp(eager_in)[0];
  EXPECT_EQ(loss.to_vector(), eager_loss.to_vector());
  EXPECT_EQ(valuesOf(grad({loss}, {in[0], in[1]})),
            valuesOf(grad({eager_loss}, {eager_in[0], eager_in[1]})));
}

TEST(DifferentiableGraphTest, HonoursPerCallNeedsInputGrad) {
  Compiled c = compiledMlp();
  TensorList in = mlpInputs(true);
  Tensor loss = c.exec->run(in)[0];
  TensorList eager_in = mlpInputs(true);
  Tensor eager_loss = mlp(eager_in)[0];
  // Only x's gradient: addmm's formula for w does not run, in the group as in eager.
  reset_counters();
  TensorList gx = grad({loss}, {in[0]}, GradArgs().retain_graph());
  const int64_t jit_formulas = counters().formulas_evaluated;
  reset_counters();
  TensorList eager_gx = grad({eager_loss}, {eager_in[0]}, GradArgs().retain_graph());
  EXPECT_EQ(jit_formulas, counters().formulas_evaluated);
  EXPECT_EQ(valuesOf(gx), valuesOf(eager_gx));
  reset_counters();
  grad({loss}, {in[0], in[1]});
  EXPECT_EQ(counters().formulas_evaluated, jit_formulas + 1);  // + addmm's formula for w
}

TEST(DifferentiableGraphTest, CreateGraphGivesEagerSecondDerivatives) {
  Compiled c = compiledMlp();
  TensorList in = mlpInputs(true);
  Tensor loss = c.exec->run(in)[0];
  TensorList eager_in = mlpInputs(true);
  Tensor eager_loss = mlp(eager_in)[0];
  Tensor g = grad({loss}, {in[1]}, GradArgs().create_graph())[0];
  Tensor eager_g = grad({eager_loss}, {eager_in[1]}, GradArgs().create_graph())[0];
  ASSERT_TRUE(g.requires_grad());
  EXPECT_EQ(g.to_vector(), eager_g.to_vector());
  // d/dx of sum(dL/dw): through the group's backward node, again.
  Tensor gg = grad({ops::sum(g)}, {in[0]})[0];
  Tensor eager_gg = grad({ops::sum(eager_g)}, {eager_in[0]})[0];
  EXPECT_EQ(gg.to_vector(), eager_gg.to_vector());
}

// Note [Contributions in eager order]: x's gradient gets contributions from four nodes of the
// group, and add/sub pass their incoming gradient on as is, so under create_graph the sums into
// x's buffer share tensors with the formulas of older nodes. Sent when eager sends them, the
// sums are recorded in eager's order and the second derivative has eager's bits; sent at the
// end of the group's backward they were not (the last bit of one element differed).
TEST(DifferentiableGraphTest, SecondDerivativesHaveEagerBits) {
  auto program = [](const TensorList& in) -> TensorList {
    const Tensor& x = in[0];
    Tensor a = ops::add(ops::mul(x, x), x);
    Tensor y = ops::sub(ops::add(x, a), a);
    return {y, ops::exp(ops::tanh(a))};
  };
  // The same ops in the order the pass puts them in the group.
  auto in_group_order = [](const TensorList& in) -> TensorList {
    const Tensor& x = in[0];
    Tensor a = ops::add(ops::mul(x, x), x);
    Tensor e = ops::exp(ops::tanh(a));
    return {ops::sub(ops::add(x, a), a), e};
  };
  auto inputs = [] {
    Tensor x = ops::uniform({2, 3}, -1.5, 1.5, 100);
    x.set_requires_grad(true);
    return TensorList{x};
  };
  // d/dx of sum(d(sum of the results)/dx ^ 2).
  auto second = [](const TensorList& in, const TensorList& out) {
    Tensor g =
        grad({ops::add(ops::sum(out[0]), ops::sum(out[1]))}, in, GradArgs().create_graph())[0];
    return grad({ops::sum(ops::mul(g, g))}, in)[0].to_vector();
  };
  auto g = tracedInGroups(program, inputs());
  const std::string text = toString(*g);
  ASSERT_EQ(g->nodes().size(), 1u) << text;
  ASSERT_LT(text.find("aten::exp"), text.find("aten::sub")) << text;
  const GraphExecutor exec(*g);
  const TensorList in = inputs(), eager_in = inputs();
  EXPECT_EQ(second(in, exec.run(in)), second(eager_in, in_group_order(eager_in)));
}

TEST(DifferentiableGraphTest, InPlaceWriteToASavedValueFailsTheVersionCheck) {
  auto program = [](const TensorList& in) -> TensorList {
    return {ops::exp(ops::mul(in[0], in[1]))};
  };
  Tensor x = ops::uniform({3}, -1, 1, 4), y = ops::uniform({3}, -1, 1, 5);
  auto g = trace(program, {x, y});
  createAutodiffSubgraphs(*g);
  GraphExecutor exec(*g);
  x.set_requires_grad(true);
  Tensor y2 = ops::clone(y);
  Tensor out = exec.run(TensorList{x, y2})[0];
  ops::add_(y2, y2);  // mul saved y2 for x's gradient
  // Named as the op's own node names it, and the node that runs its formula.
  auto message = [](const Tensor& loss, const Tensor& wrt) {
    try {
      grad({loss}, {wrt});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string in_group = message(ops::sum(out), x);
  EXPECT_NE(in_group.find("the value 'other' of shape [3] saved by 'mul' in "
                          "'DifferentiableGraphBackward' is at version 1; expected version 0."),
            std::string::npos)
      << in_group;
  Tensor y3 = ops::clone(y);
  Tensor eager_out = ops::exp(ops::mul(x, y3));
  ops::add_(y3, y3);
  const std::string eager = message(ops::sum(eager_out), x);
  EXPECT_NE(eager.find("the value 'other' of shape [3] saved by 'mul' is at version 1"),
            std::string::npos)
      << eager;
}

// A view a group returns was made in the caller's grad mode: when its base is written in place
// afterwards, its history is regenerated from the base, as the eager view's is (a view made
// with grad mode off would refuse). Found by the traced-program properties.
TEST(ExecutorTest, AViewAGroupReturnsFollowsALaterWriteToItsBase) {
  auto program = [](const TensorList& in) {
    Tensor y = ops::add(in[0], in[0]);
    Tensor v = ops::reshape(y, {3, 2});
    ops::add_(y, in[0]);
    return TensorList{y, v};
  };
  size_t groups = 0;
  auto g = tracedInGroups(program, {t23()}, &groups);
  ASSERT_GT(groups, 0u);
  auto leaf = [] {
    Tensor x = t23();
    x.set_requires_grad(true);
    return x;
  };
  const Tensor xe = leaf(), xc = leaf();
  const TensorList eager = program({xe});
  const TensorList compiled = GraphExecutor(*g).run(TensorList{xc});
  ASSERT_TRUE(compiled[1].requires_grad());
  EXPECT_EQ(toString(compiled[1]), toString(eager[1]));
  // d/dx sum(v * v) with v = 3x: 18x, through the base's write.
  const Tensor ge = grad({ops::sum(ops::mul(eager[1], eager[1]))}, {xe})[0];
  const Tensor gc = grad({ops::sum(ops::mul(compiled[1], compiled[1]))}, {xc})[0];
  EXPECT_EQ(toString(gc), toString(ge));
  EXPECT_EQ(toString(ge), "tensor[2, 3]{18, 36, 54, 72, 90, 108}");
}

// The gradient of sum(out[0]) + sum(out[1]) with respect to in[0] alone, with a program run
// eagerly and through one group, under every option combination: as a string, or "error" where
// the engine refuses (a saved value was written). Returns the eager outcomes.
std::vector<std::string> expectGroupMatchesEagerForTheFirstInput(
    const std::function<TensorList(const TensorList&)>& program, const TensorList& example) {
  size_t groups = 0;
  auto g = tracedInGroups(program, example, &groups);
  EXPECT_EQ(groups, 1u);
  auto leaves = [&] {
    TensorList xs;
    for (const Tensor& t : example) {
      xs.push_back(ops::mul(t, ops::from_vector({0.25}, {})));
      xs.back().set_requires_grad(true);
    }
    return xs;
  };
  auto outcome = [](const TensorList& out, const Tensor& x) -> std::string {
    try {
      return toString(grad({ops::add(ops::sum(out[0]), ops::sum(out[1]))}, {x})[0]);
    } catch (const Error&) {
      return "error";
    }
  };
  std::vector<std::string> eager;
  for (uint32_t bits = 0; bits < EngineOptions::kCombinations; ++bits) {
    SCOPED_TRACE(to_string(EngineOptions::from_bits(bits)));
    OptionsGuard guard(EngineOptions::from_bits(bits));
    const TensorList xe = leaves(), xc = leaves();
    eager.push_back(outcome(program(xe), xe[0]));
    EXPECT_EQ(outcome(GraphExecutor(*g).run(xc), xc[0]), eager.back());
  }
  return eager;
}

// A group's result that its backward reads (exp's) is written in place after the group. A grad()
// call that needs only x0's gradient (through mm) never runs exp's node in eager code, whatever
// the options, so the group must not unpack exp's saved result either. With
// per_call_needs_input_grad off it once did (Call::on_executed_path).
TEST(ExecutorTest, ASavedResultWrittenAfterTheGroupIsNotReadWhenItsOpWouldNotRun) {
  const Tensor t32 = ops::from_vector({1, 2, 3, 4, 5, 6}, {3, 2});
  const std::vector<std::string> eager = expectGroupMatchesEagerForTheFirstInput(
      [](const TensorList& in) {
        Tensor a = ops::add(in[1], in[1]);
        Tensor m = ops::mm(a, in[0]);
        Tensor e = ops::exp(ops::tanh(a));
        ops::add_(e, in[1]);
        return TensorList{e, m};
      },
      {t23(), t32});
  // d/dx0 sum(mm(a, x0)) = a^T 1, with a = 2 x1: the column sums of 2 x1, 4.5 and 6.
  for (const std::string& e : eager) EXPECT_EQ(e, "tensor[2, 3]{4.5, 4.5, 4.5, 6, 6, 6}");
}

// mm(a, b) with a = 2 x1 and b = 2 x0, a value the group both reads and returns, so it runs as
// two segments (Note [Differentiable graphs]); b is written after the group. Eager code needs
// mm's saved b only for a's gradient, which leads to x1: with per_call_needs_input_grad on,
// grad() with respect to x0 never reads it. The first segment's node stands for both adds, and
// answers per slot whether a gradient sent into it is used (Note [Nodes that stand for several
// ops]), as the adds' own nodes would; it once answered for the whole node, and mm's segment
// read b for a gradient nobody used.
TEST(ExecutorTest, ASegmentSendsNoGradientIntoASlotOfTheNextThatLeadsNowhere) {
  const Tensor t32 = ops::from_vector({1, 2, 3, 4, 5, 6}, {3, 2});
  const std::vector<std::string> eager = expectGroupMatchesEagerForTheFirstInput(
      [](const TensorList& in) {
        Tensor a = ops::add(in[1], in[1]);
        Tensor b = ops::add(in[0], in[0]);
        Tensor m = ops::mm(a, b);
        ops::add_(b, in[0]);
        return TensorList{b, m};
      },
      {t23(), t32});
  for (uint32_t bits = 0; bits < EngineOptions::kCombinations; ++bits) {
    const bool per_call = EngineOptions::from_bits(bits).per_call_needs_input_grad;
    // out[0] = 2 x0 + x0 gives 3; mm(a, 2 x0) gives 2 a^T 1, twice the column sums of a = 2 x1
    // (4.5 and 6). Without the per-call view, mm's formula for a runs too, and finds b written.
    EXPECT_EQ(eager[bits], per_call ? "tensor[2, 3]{12, 12, 12, 15, 15, 15}" : "error");
  }
}

// The second derivative through a temporary: mm's group keeps a = 2 x1 (a temporary, Note
// [Gradient graphs]) as an output of its node, so the first-order gradient's mm(g, a^T) sends
// its gradient into that slot. With respect to x0 the slot leads nowhere: the node has a used
// edge (mm's contribution to x0), yet nothing reaches it. It must not run, nor may x0's capture
// wait for it; once it did, and x0's second derivative came back undefined.
TEST(ExecutorTest, ANodeThatOnlyUnusedSlotsLeadToDoesNotRun) {
  auto program = [](const TensorList& in) {
    Tensor a = ops::add(in[1], in[1]);
    return TensorList{ops::mm(in[0], a), ops::mul(in[0], in[0])};
  };
  const Tensor t32 = ops::from_vector({1, 2, 3, 4, 5, 6}, {3, 2});
  size_t groups = 0;
  auto g = tracedInGroups(program, {t23(), t32}, &groups);
  ASSERT_EQ(groups, 2u);
  const GraphExecutor executor(*g);
  for (uint32_t bits = 0; bits < EngineOptions::kCombinations; ++bits) {
    SCOPED_TRACE(to_string(EngineOptions::from_bits(bits)));
    OptionsGuard guard(EngineOptions::from_bits(bits));
    for (const bool compiled : {false, true}) {
      TensorList xs = {ops::mul(t23(), ops::from_vector({0.25}, {})),
                       ops::mul(t32, ops::from_vector({0.25}, {}))};
      for (Tensor& x : xs) x.set_requires_grad(true);
      const TensorList out = compiled ? executor.run(xs) : program(xs);
      const Tensor loss = ops::add(ops::sum(out[0]), ops::sum(out[1]));
      const Tensor first = grad({loss}, {xs[0]}, GradArgs().create_graph())[0];
      // first = 1 a^T + 2 x0, and d/dx0 sum(first^2) = 2 first * 2.
      EXPECT_EQ(toString(first), "tensor[2, 3]{2, 4.5, 7, 3.5, 6, 8.5}");
      const Tensor second = grad({ops::sum(ops::mul(first, first))}, {xs[0]})[0];
      EXPECT_EQ(toString(second), "tensor[2, 3]{8, 18, 28, 14, 24, 34}");
    }
  }
}

// The group returns a view of a value it computes (reshape of 2x) but not that value, and the
// caller writes the view in place. In eager code that rewrites the base's history, so the base
// must have one: the group is cut after the base's op, which makes it an output of a node (Note
// [Differentiable graphs]). Without the cut the base had no grad_fn, and the write was refused
// as if the view were a view of a leaf.
TEST(ExecutorTest, AReturnedViewOfAValueTheGroupComputesCanBeWrittenInPlace) {
  auto program = [](const TensorList& in) {
    Tensor v = ops::reshape(ops::add(in[0], in[0]), {2, 3});
    ops::add_(v, in[0]);
    return TensorList{v};
  };
  size_t groups = 0;
  auto g = tracedInGroups(program, {t23()}, &groups);
  ASSERT_EQ(groups, 1u);
  const GraphExecutor executor(*g);
  for (const bool compiled : {false, true}) {
    Tensor x = t23();
    x.set_requires_grad(true);
    const Tensor v = compiled ? executor.run(TensorList{x})[0] : program({x})[0];
    // v = 3x, and d/dx sum(v * v) = 18x.
    EXPECT_EQ(toString(grad({ops::sum(ops::mul(v, v))}, {x})[0]),
              "tensor[2, 3]{18, 36, 54, 72, 90, 108}");
  }
}

// The group returns a view of an input that does not require grad (a detached value), so no
// node is attached to it; the caller then writes it in place with a tensor that requires grad.
// Eager code allows that (the view was made with grad mode on), so the group's view must not
// keep the no-grad flag its body's NoGradGuard gave it; once only views that required grad
// were restored.
TEST(ExecutorTest, AReturnedViewThatDoesNotRequireGradCanBeWrittenInPlace) {
  auto program = [](const TensorList& in) {
    Tensor v = ops::reshape(ops::detach(ops::add(in[0], in[0])), {3, 2});
    Tensor s = ops::add(v, ops::reshape(in[0], {3, 2}));
    ops::add_(v, ops::reshape(in[0], {3, 2}));
    return TensorList{s, v};
  };
  auto g = tracedInGroups(program, {t23()});
  const GraphExecutor executor(*g);
  for (const bool compiled : {false, true}) {
    Tensor x = t23();
    x.set_requires_grad(true);
    const TensorList out = compiled ? executor.run(TensorList{x}) : program({x});
    ASSERT_FALSE(out[1].is_leaf());
    // s = d + x and v = d + x, with d = 2x detached: each adds 1.
    EXPECT_EQ(toString(grad({ops::add(ops::sum(out[0]), ops::sum(out[1]))}, {x})[0]),
              "tensor[2, 3]{2, 2, 2, 2, 2, 2}");
  }
}

// Note [Releasing dead values]: peak bytes above what was live before the run, in blocks of
// `numel` doubles (the CPU allocator counts the bytes asked for).
int64_t peakBlocksOfRun(const Graph& g, const std::vector<IValue>& inputs, int64_t numel,
                        const RunOptions& options = {}) {
  const int64_t live = live_bytes();
  reset_peak_bytes();
  runGraph(g, inputs, options);
  const int64_t bytes = peak_bytes() - live;
  EXPECT_EQ(bytes % (numel * 8), 0) << bytes;
  return bytes / (numel * 8);
}

// exp(exp(x)) + exp(x): a, b and c each die at their last reader, and with grad mode off (as a
// jit::CompiledFunction runs) the add writes into c, which dies there and is held by nothing
// else, so at most two blocks are ever live; with grad mode on the add writes a new block. With
// an observer every value is kept: four blocks.
TEST(ExecutorTest, AWholeGraphRunReleasesEachValueAfterItsLastReader) {
  auto g = parseGraph(R"IR(graph(%x : Tensor):
  %a : Tensor = aten::mul(%x, %x)
  %b : Tensor = aten::exp(%a)
  %c : Tensor = aten::exp(%b)
  %d : Tensor = aten::add(%c, %b)
  return (%d)
)IR");
  const int64_t n = 1000;
  const Tensor x = ops::uniform({n}, -1, 1, 5, DType::kFloat64);
  EXPECT_EQ(peakBlocksOfRun(*g, {x}, n), 3);
  NoGradGuard no_grad;
  EXPECT_EQ(peakBlocksOfRun(*g, {x}, n), 2);
  int observed = 0;
  RunOptions observing;
  observing.observe = [&](const Value*, const IValue&) { ++observed; };
  EXPECT_EQ(peakBlocksOfRun(*g, {x}, n, observing), 4);
  EXPECT_EQ(observed, 5);
  const Tensor b = ops::exp(ops::mul(x, x));
  EXPECT_EQ(toString(runGraph(*g, {x})[0]), toString(ops::add(ops::exp(b), b)));
}

// A sum writes into an operand only where no one can see it: not a graph input (the caller
// holds it), not a value the graph returns, not a value a live view shares storage with.
TEST(ExecutorTest, ASumWritesOnlyIntoAnOperandNobodyElseHolds) {
  auto g = parseGraph(R"IR(graph(%x : Tensor):
  %b : Tensor = aten::exp(%x)
  %c : Tensor = aten::exp(%b)
  %v : Tensor = aten::reshape[shape=[2, 3]](%c)
  %d : Tensor = aten::add(%c, %b)
  %e : Tensor = aten::add(%x, %d)
  return (%e, %v, %b)
)IR");
  const Tensor x = ops::from_vector({0.5, -1, 2, 0, 1, -0.25}, {6});
  const std::string x_before = toString(x);
  NoGradGuard no_grad;
  auto out = runGraph(*g, {x});
  const Tensor b = ops::exp(x);
  const Tensor c = ops::exp(b);
  EXPECT_EQ(toString(x), x_before);
  EXPECT_EQ(toString(out[0]), toString(ops::add(x, ops::add(c, b))));
  EXPECT_EQ(toString(out[1]), toString(ops::reshape(c, {2, 3})));
  EXPECT_EQ(toString(out[2]), toString(b));
}

// Note [Releasing dead values]: an op that can add its result into a tensor (tanh_backward,
// scaled_product) does so into the sum's dying operand, with grad mode off and fuse_gradient_sums
// on: one block fewer at the peak (d, c and q live at once otherwise), the bits of the op then
// the add.
TEST(ExecutorTest, AnOpAddsItsResultIntoTheSumsDyingOperand) {
  auto g = parseGraph(R"IR(graph(%x : Tensor, %t : Tensor):
  %a : Tensor = aten::mul(%x, %x)
  %p : Tensor = aten::tanh_backward(%x, %t)
  %d : Tensor = aten::add(%a, %p)
  %c : Tensor = aten::mul(%t, %t)
  %q : Tensor = aten::scaled_product[scalar=-2.0](%x, %t, %d)
  %e : Tensor = aten::add(%c, %q)
  return (%e)
)IR");
  const int64_t n = 1000;
  const Tensor x = ops::uniform({n}, -1, 1, 5, DType::kFloat64);
  const Tensor t = ops::uniform({n}, -1, 1, 6, DType::kFloat64);
  NoGradGuard no_grad;
  const Tensor d = ops::add(ops::mul(x, x), ops::tanh_backward(x, t));
  // scaled_product(a, b, c, s) = a * ((b * s) * c), with these ops' bits.
  const Tensor q = ops::mul(x, ops::mul(ops::mul(t, -2.0), d));
  const std::vector<double> eager = ops::add(ops::mul(t, t), q).to_vector();
  for (bool fuse : {false, true}) {
    OptionsGuard options(EngineOptions().with_fuse_gradient_sums(fuse));
    reset_counters();
    EXPECT_EQ(tensorOf(runGraph(*g, {x, t})[0]).to_vector(), eager) << fuse;
    EXPECT_EQ(counters().fused_sums, fuse ? 2 : 0);
    EXPECT_EQ(peakBlocksOfRun(*g, {x, t}, n), fuse ? 2 : 3);
  }
  GradModeGuard grad_mode(true);
  reset_counters();
  EXPECT_EQ(tensorOf(runGraph(*g, {x, t})[0]).to_vector(), eager);
  EXPECT_EQ(counters().fused_sums, 0);
}

// Not where the dying operand is read between the op and the sum, nor where the op's result has
// another reader: the values are those of the ops one after another.
TEST(ExecutorTest, AnOpAddsIntoNoOperandThatOthersRead) {
  auto g = parseGraph(R"IR(graph(%x : Tensor, %t : Tensor):
  %a : Tensor = aten::mul(%x, %x)
  %p : Tensor = aten::tanh_backward(%x, %t)
  %r : Tensor = aten::exp(%a)
  %d : Tensor = aten::add(%a, %p)
  %b : Tensor = aten::mul(%t, %t)
  %q : Tensor = aten::tanh_backward(%t, %x)
  %f : Tensor = aten::add(%b, %q)
  %g : Tensor = aten::mul(%q, %f)
  %e : Tensor = aten::add(%d, %r)
  %h : Tensor = aten::add(%e, %g)
  return (%h)
)IR");
  const Tensor x = ops::uniform({100}, -1, 1, 5, DType::kFloat64);
  const Tensor t = ops::uniform({100}, -1, 1, 6, DType::kFloat64);
  NoGradGuard no_grad;
  const Tensor a = ops::mul(x, x), q = ops::tanh_backward(t, x);
  const Tensor e = ops::add(ops::add(a, ops::tanh_backward(x, t)), ops::exp(a));
  const Tensor f = ops::add(ops::mul(t, t), q);
  reset_counters();
  EXPECT_EQ(tensorOf(runGraph(*g, {x, t})[0]).to_vector(), ops::add(e, ops::mul(q, f)).to_vector());
  EXPECT_EQ(counters().fused_sums, 0);
}

// The ops that slicing makes useful, traced and grouped: values and first derivatives as eager.
// where and masked_fill read a copy of their mask, a forward value, so they run outside the
// groups, on their own nodes (Note [Masks are 0 and 1], ops/select.cc).
TEST(ExecutorTest, SelectionAndIndexOpsTracedMatchEager) {
  auto program = [](const TensorList& in) -> TensorList {
    const Tensor& x = in[0];
    const Tensor& y = in[1];
    const Tensor m = ops::maximum(ops::abs(x), ops::clamp(y, 1.5, 4.5));
    const Tensor s = ops::softmax(ops::cumsum(ops::sqrt(m), 1), 0);
    const Tensor w = ops::where(ops::gt(x, y), s, ops::masked_fill(m, ops::gt(y, x), 2.0));
    const Tensor g = ops::gather(w, 1, {{2, 2}, {2, 0, 1, 1}});
    return {ops::sum(ops::mul(ops::max(g, 1).values, ops::index_select(w, 1, {0, 2})))};
  };
  auto inputs = [] {
    Tensor x = ops::from_vector({1, -2, 3, 4, -5, 6}, {2, 3});
    Tensor y = ops::from_vector({2, 1, 5, 3, 3, 7}, {2, 3});
    return TensorList{x.set_requires_grad(true), y.set_requires_grad(true)};
  };
  size_t groups = 0;
  auto g = tracedInGroups(program, inputs(), &groups);
  EXPECT_GT(groups, 0u) << toString(*g);
  const TensorList eager_in = inputs(), traced_in = inputs();
  const Tensor eager = program(eager_in)[0];
  const Tensor traced = tensorOf(GraphExecutor(*g).run(traced_in)[0]);
  EXPECT_EQ(toString(traced), toString(eager));
  const TensorList ge = grad({eager}, eager_in), gt = grad({traced}, traced_in);
  EXPECT_EQ(toString(gt[0]), toString(ge[0]));
  EXPECT_EQ(toString(gt[1]), toString(ge[1]));
}

}  // namespace
}  // namespace ag::jit
