// The traced workloads of seed 002's section: what the tracer records, that the pass groups it,
// that the executor's hessian step gives eager's bits, and that PyTorch can parse the graphs.
#include "paper/workloads/traced_workloads.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/jit/create_autodiff_subgraphs.h"
#include "paper/workloads/torchscript_ir.h"

namespace ag::paper {
namespace {

HessianConfig small() {
  HessianConfig c;
  c.batch = 20;
  c.hidden = 16;
  c.layers = 3;
  return c;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(TracedWorkloadsTest, HessianForwardIsLinearsAndActivations) {
  const HessianConfig c = small();
  const Mlp mlp = make_mlp(c);
  const std::string text = jit::toString(*trace_hessian_forward(mlp, make_hessian_input(c)));
  EXPECT_EQ(count(text, "aten::linear"), 4u) << text;
  EXPECT_EQ(count(text, "aten::relu"), 3u) << text;
  EXPECT_EQ(count(text, "prim::Constant"), 0u) << text;  // the weights are inputs
}

TEST(TracedWorkloadsTest, PassMakesOneGroupOfTheMlp) {
  const HessianConfig c = small();
  const Mlp mlp = make_mlp(c);
  CompiledHessian compiled(mlp, make_hessian_input(c));
  const std::string text = jit::toString(compiled.graph());
  EXPECT_EQ(count(text, "prim::DifferentiableGraph"), 1u) << text;
}

TEST(TracedWorkloadsTest, ExecutorHessianStepEqualsEagerBitwise) {
  for (Activation a : {Activation::kRelu, Activation::kTanh}) {
    HessianConfig c = small();
    c.activation = a;
    const Mlp mlp = make_mlp(c);
    const Tensor x = make_hessian_input(c);
    CompiledHessian compiled(mlp, x);
    const double eager = hessian_step(mlp, x, true);
    const std::vector<double> eager_grad = mlp.weights[0].grad().to_vector();
    EXPECT_EQ(compiled.step(true), eager) << activation_name(a);
    EXPECT_EQ(mlp.weights[0].grad().to_vector(), eager_grad) << activation_name(a);
  }
}

// Seed 001's compiled Tanh step with the final backward (six hidden layers, small widths): the
// final backward pushes its seed (ones) through the first layer's product and then, layer by
// layer, through the same tanh_backward and product that the second grad pushed its own ones
// through: 12 ops, 6 of them products, computed once (Note [Common subexpressions]).
TEST(TracedWorkloadsTest, CompiledTanhStepComputesTheRepeatedProductsOnce) {
  HessianConfig c = small();
  c.layers = 6;
  c.activation = Activation::kTanh;
  const Mlp mlp = make_mlp(c);
  const Tensor x = make_hessian_input(c);
  jit::CompileOptions apart_options;
  apart_options.merge_common_subexpressions = false;
  const JitHessianStep merged(mlp, x, true), apart(mlp, x, true, apart_options);
  auto products = [](const JitHessianStep& s) {
    const std::string text = jit::toString(s.function().graph());
    return count(text, "aten::mm") + count(text, "aten::linear");
  };
  EXPECT_EQ(merged.function().subexpressions_merged(), 12);
  EXPECT_EQ(products(apart), 71u);
  EXPECT_EQ(products(merged), 65u);
  EXPECT_EQ(merged.step(), apart.step());
}

// The forward-over-reverse y_xx compiled (what the forward-mode section compares with JAX's jit)
// equals the nested grads' y_xx; ReLU's, zeros by construction, is folded to a constant.
TEST(TracedWorkloadsTest, CompiledForwardOverReverseEqualsNestedGrads) {
  for (const Activation a : {Activation::kTanh, Activation::kRelu}) {
    HessianConfig c = small();
    c.activation = a;
    const Mlp mlp = make_mlp(c);
    const Tensor x = make_hessian_input(c);
    const JitHessianStep nested(mlp, x, false);
    const JitHessianStep forward(mlp, x, false, jit::CompileOptions(), YxxBy::kForwardOverReverse);
    const double want = nested.step();
    EXPECT_NEAR(forward.step(), want, 1e-4 * (1 + std::abs(want)));
    if (a == Activation::kRelu) {
      EXPECT_EQ(want, 0.0);
      EXPECT_GT(forward.function().zeros_folded(), 0);
    }
  }
}

TEST(TracedWorkloadsTest, TracedGraphsConvertToTorchScriptIr) {
  const HessianConfig c = small();
  const std::string mlp_ir =
      to_torchscript_ir(*trace_hessian_forward(make_mlp(c), make_hessian_input(c)));
  EXPECT_EQ(count(mlp_ir, "aten::linear("), 4u) << mlp_ir;
  UnrolledLoopConfig u;
  u.batch = 10;
  const std::string loop_ir = to_torchscript_ir(*trace_unrolled_loop_loss(u));
  EXPECT_EQ(count(loop_ir, "aten::nll_loss("), 1u) << loop_ir;
  EXPECT_EQ(count(loop_ir, "aten::log_softmax("), 1u) << loop_ir;
}

}  // namespace
}  // namespace ag::paper
