#include "engine/jit/compile.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/error.h"
#include "engine/jit/tracer.h"
#include "ops/ops.h"

namespace ag::jit {
namespace {

Tensor leaf(const Shape& shape, uint64_t seed) {
  Tensor t = ops::uniform(shape, -1, 1, seed, DType::kFloat64);
  t.set_requires_grad(true);
  return t;
}

int countNodes(const Graph& g, const std::string& kind) {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->kind() == kind;
  return n;
}

std::vector<double> values(const Tensor& t) {
  if (!t.defined()) return {};
  return std::vector<double>(t.data<double>(), t.data<double>() + t.numel());
}

// A two-layer MLP, seed 001's hessian step in small: inputs {x, w1, b1, w2, b2}; y_xx =
// d/dx sum(d/dx sum(y)), then, with `final_backward`, the gradients of sum(y_xx) with respect to
// the weights and biases.
TensorList hessianStep(const TensorList& in, bool relu, bool final_backward) {
  const Tensor& x = in[0];
  Tensor h = ops::linear(x, in[1], in[2]);
  h = relu ? ops::relu(h) : ops::tanh(h);
  Tensor y = ops::linear(h, in[3], in[4]);
  Tensor y_x = grad({y}, {x}, GradArgs().grad_outputs({ops::ones_like(y)}).create_graph())[0];
  Tensor y_xx = grad({y_x}, {x}, GradArgs().grad_outputs({ops::ones_like(y_x)}).create_graph())[0];
  if (!final_backward) return {y_xx};
  // b2 does not reach y_xx: its gradient is undefined (allow_unused), as PyTorch's would be None.
  TensorList out = grad({ops::sum(y_xx)}, {in[1], in[2], in[3], in[4]}, GradArgs().allow_unused());
  out.insert(out.begin(), y_xx);
  return out;
}

TensorList mlpInputs(uint64_t seed) {
  return {leaf({5, 3}, seed), leaf({4, 3}, seed + 1), leaf({4}, seed + 2), leaf({1, 4}, seed + 3),
          leaf({1}, seed + 4)};
}

// A gradient formula reads a saved square matrix while its transposed view, of the same memory,
// offset and shape, is bound too: the trace must name the matrix, not its transpose (the strides
// differ).
TEST(CompiledFunctionTest, SavedSquareMatrixIsNotTakenForItsTranspose) {
  auto program = [](const TensorList& in) {
    Tensor y = ops::mm(in[0], in[1]);  // [2, 2]
    Tensor t = ops::transpose(y, 0, 1);
    Tensor z = ops::mm(y, in[0]);
    Tensor loss = ops::add(ops::sum(z), ops::sum(ops::mul(t, t)));
    return grad({loss}, {in[0], in[1]});
  };
  const TensorList example = {leaf({2, 3}, 1), leaf({3, 2}, 2)};
  CompiledFunction f(program, example);
  const TensorList other = {leaf({2, 3}, 3), leaf({3, 2}, 4)};
  const TensorList got = f(other), want = program(other);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(got[i].to_vector(), want[i].to_vector()) << i;
}

// A view op's attributes are made twice while tracing (the trace's and the node's): both must
// hold the op's arguments, which the view's gradient (another permute) reads.
TEST(CompiledFunctionTest, TracedViewsKeepTheirArgumentsForTheirGradients) {
  auto program = [](const TensorList& in) {
    Tensor p = ops::permute(ops::mul(in[0], in[0]), {1, 0});
    Tensor s = ops::select(ops::as_strided(in[0], {2}, {2}, 1), 0, 1);
    return grad({ops::add(ops::sum(ops::mul(p, p)), s)}, {in[0]}, GradArgs().create_graph());
  };
  CompiledFunction f(program, {leaf({2, 3}, 5)});
  const TensorList other = {leaf({2, 3}, 6)};
  EXPECT_EQ(f(other)[0].to_vector(), program(other)[0].to_vector());
}

TEST(CompiledFunctionTest, SecondDerivativeOfACubeIsSixX) {
  CompiledFunction f(
      [](const TensorList& in) {
        Tensor y_x = grad({ops::sum(ops::pow(in[0], 3.0))}, {in[0]}, GradArgs().create_graph())[0];
        return TensorList{grad({ops::sum(y_x)}, {in[0]})[0]};
      },
      {leaf({2, 3}, 1)});
  const Tensor x = ops::from_vector({-2, -0.5, 0, 0.25, 1, 3}, {2, 3}, DType::kFloat64);
  const Tensor y_xx = f({x})[0];
  EXPECT_FALSE(y_xx.requires_grad());
  const std::vector<double> got = values(y_xx), want = {-12, -3, 0, 1.5, 6, 18};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
}

// Sums fused into formulas per step of the hessianStep below, eager and compiled.
constexpr int64_t kEagerFusedSums = 1, kCompiledFusedSums = 1;

TEST(CompiledFunctionTest, TanhHessianMatchesEagerOnOtherInputs) {
  for (bool final_backward : {false, true}) {
    for (bool fold : {true, false}) {
      CompileOptions options;
      options.fold_zeros = fold;
      CompiledFunction f(
          [&](const TensorList& in) { return hessianStep(in, false, final_backward); },
          mlpInputs(10), options);
      EXPECT_EQ(f.zeros_folded(), 0);  // tanh's second-order terms are not zero
      EXPECT_GT(countNodes(f.graph(), "aten::mm"), 0);
      const TensorList in = mlpInputs(20);
      reset_counters();
      const TensorList want = hessianStep(in, false, final_backward);
      // The compiled graph runs tanh_backward's derivative as the fused kernel eager ran (Note
      // [Fused formula kernels]), not as the three ops it stands for.
      EXPECT_EQ(countNodes(f.graph(), "aten::scaled_product"), counters().fused_formulas);
      EXPECT_EQ(counters().fused_formulas, final_backward ? 5 : 1);
      EXPECT_EQ(countNodes(f.graph(), "aten::mul_scalar"), 0);
      // Eager's final backward and the compiled call add some formulas' results into the sum
      // they meet in the same pass (Note [Sums fused into formulas], engine/engine.cc; Note
      // [Releasing dead values]).
      EXPECT_EQ(counters().fused_sums, final_backward ? kEagerFusedSums : 0);
      reset_counters();
      const TensorList got = f(in);
      EXPECT_EQ(counters().fused_sums, final_backward ? kCompiledFusedSums : 0);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i].defined(), want[i].defined()) << i;
        if (!want[i].defined()) continue;
        ASSERT_EQ(got[i].shape(), want[i].shape());
        const std::vector<double> g = values(got[i]), w = values(want[i]);
        for (size_t k = 0; k < w.size(); ++k) EXPECT_NEAR(g[k], w[k], 1e-12) << i << " " << k;
      }
    }
  }
}

// The final backward's seed, broadcast_to(ones_like(sum(y_xx))), holds the elements of the second
// grad's seed, ones_like(y_x): the two are one value, and so is the first product that reads
// them, ones @ W1^T (Note [Common subexpressions]). The results keep their bits.
TEST(CompiledFunctionTest, TheFinalBackwardReusesTheSecondGradsSeed) {
  for (bool final_backward : {false, true}) {
    auto step = [&](const TensorList& in) { return hessianStep(in, false, final_backward); };
    CompileOptions apart_options;
    apart_options.merge_common_subexpressions = false;
    CompiledFunction merged(step, mlpInputs(10)), apart(step, mlpInputs(10), apart_options);
    EXPECT_EQ(merged.subexpressions_merged(), final_backward ? 2 : 0);
    EXPECT_EQ(apart.subexpressions_merged(), 0);
    EXPECT_EQ(countNodes(merged.graph(), "aten::broadcast_to"), 0);
    EXPECT_EQ(countNodes(apart.graph(), "aten::broadcast_to"), final_backward ? 1 : 0);
    EXPECT_EQ(countNodes(apart.graph(), "aten::mm") - countNodes(merged.graph(), "aten::mm"),
              final_backward ? 1 : 0);
    const TensorList in = mlpInputs(20);
    const TensorList got = merged(in), want = apart(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(values(got[i]), values(want[i])) << i;
  }
}

// ReLU's second derivative is zero by construction (Note [Structural zeros]): folded, nothing but
// the zeros of the results is left to run; unfolded, the graph runs every product, as eager does.
TEST(CompiledFunctionTest, ReluHessianFoldsToZeros) {
  for (bool final_backward : {false, true}) {
    CompiledFunction folded(
        [&](const TensorList& in) { return hessianStep(in, true, final_backward); }, mlpInputs(10));
    CompileOptions off;
    off.fold_zeros = false;
    CompiledFunction unfolded(
        [&](const TensorList& in) { return hessianStep(in, true, final_backward); }, mlpInputs(10),
        off);
    EXPECT_GT(folded.zeros_folded(), 0);
    EXPECT_EQ(countNodes(folded.graph(), "aten::mm"), 0);
    EXPECT_EQ(countNodes(folded.graph(), "aten::linear"), 0);
    EXPECT_EQ(countNodes(folded.graph(), "aten::threshold_backward"), 0);
    const TensorList in = mlpInputs(20);
    const TensorList want = hessianStep(in, true, final_backward);
    const size_t outputs = final_backward ? 5 : 1;
    // Each defined result is a constant of zeros and a fresh copy per run; an undefined one (the
    // second layer's weight and bias do not reach y_xx) is a None constant.
    size_t defined = 0;
    for (const Tensor& t : want) defined += t.defined();
    EXPECT_EQ(defined, final_backward ? 3u : 1u);
    EXPECT_EQ(countNodes(folded.graph(), "aten::zeros_like"), defined);
    EXPECT_EQ(folded.graph().numNodes(), 2 * defined + (outputs - defined));
    EXPECT_GT(countNodes(unfolded.graph(), "aten::mm"), 0);

    const TensorList got = folded(in), all_ops = unfolded(in);
    ASSERT_EQ(got.size(), outputs);
    for (size_t i = 0; i < outputs; ++i) {
      ASSERT_EQ(got[i].defined(), want[i].defined()) << i;
      if (!want[i].defined()) continue;
      EXPECT_EQ(got[i].shape(), want[i].shape());
      EXPECT_EQ(values(got[i]), values(want[i]));
      EXPECT_EQ(values(all_ops[i]), values(want[i]));
      for (double v : values(want[i])) EXPECT_EQ(v, 0.0);
    }
  }
}

TEST(CompiledFunctionTest, EachCallReturnsFreshTensors) {
  CompiledFunction f([&](const TensorList& in) { return hessianStep(in, true, false); },
                     mlpInputs(10));
  const TensorList in = mlpInputs(20);
  Tensor first = f(in)[0];
  ops::add_(first, ops::ones_like(first));  // a caller may write its result
  const Tensor second = f(in)[0];
  EXPECT_NE(first.impl()->storage.get(), second.impl()->storage.get());
  for (double v : values(second)) EXPECT_EQ(v, 0.0);
}

TEST(CompiledFunctionTest, AnInputOfAnotherShapeIsAClearError) {
  CompiledFunction f([&](const TensorList& in) { return hessianStep(in, false, false); },
                     mlpInputs(10));
  TensorList in = mlpInputs(20);
  in[0] = leaf({6, 3}, 1);
  try {
    f(in);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("input 0 is float64[6, 3]"), std::string::npos) << what;
    EXPECT_NE(what.find("traced with float64[5, 3]"), std::string::npos) << what;
  }
  EXPECT_THROW(f({in[0]}), Error);
  const TensorList ok = mlpInputs(20);
  EXPECT_EQ(f(ok)[0].shape(), Shape({5, 3}));  // still usable
}

TEST(CompiledFunctionTest, BackwardIntoDotGradIsRefusedAndLeavesNoTrace) {
  const TensorList in = mlpInputs(10);
  try {
    CompiledFunction f(
        [](const TensorList& in) {
          backward(ops::sum(ops::linear(in[0], in[1], in[2])));
          return TensorList{in[0]};
        },
        in);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(".grad"), std::string::npos) << e.what();
  }
  // No trace is left active: the engine and grad() work as before.
  const Tensor g = grad({ops::sum(ops::mul(in[0], in[0]))}, {in[0]})[0];
  EXPECT_EQ(values(g), values(ops::mul(in[0].detach(), 2.0)));
}

TEST(CompiledFunctionTest, AForwardTraceStillRefusesGrad) {
  const Tensor x = leaf({2}, 1);
  try {
    trace([](const TensorList& in) { return grad({ops::sum(in[0])}, {in[0]}); }, {x});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kWithGradients"), std::string::npos) << e.what();
  }
}

// A write could make a zero not zero: a graph with an in-place op is run as traced.
TEST(CompiledFunctionTest, ProgramsThatWriteInPlaceAreNotFolded) {
  auto step = [](const TensorList& in) {
    Tensor h = ops::mul(in[0], 2.0);
    ops::add_(h, in[0]);
    Tensor y = ops::sum(ops::relu(h));
    Tensor y_x = grad({y}, {in[0]}, GradArgs().create_graph())[0];
    return TensorList{grad({ops::sum(y_x)}, {in[0]})[0], y_x};
  };
  CompiledFunction f(step, {leaf({2, 3}, 1)});
  EXPECT_EQ(f.zeros_folded(), 0);
  EXPECT_EQ(countNodes(f.graph(), "aten::add_"), 1);
  const TensorList in = {leaf({2, 3}, 2)};
  const TensorList got = f(in), want = step(in);
  EXPECT_EQ(values(got[0]), values(want[0]));
  EXPECT_EQ(values(got[1]), values(want[1]));
}

}  // namespace
}  // namespace ag::jit
