// Reduced programs as standalone PyTorch scripts, compared with the expected text.
#include "proptests/foreign/standalone_script.h"

#include <gtest/gtest.h>

namespace ag::proptests {
namespace {

std::string render(const std::string& text, const StandaloneOptions& options = {}) {
  return render_standalone(parse_program(text), options);
}

StandaloneOptions random_leaves() {
  StandaloneOptions o;
  o.leaves = LeafValues::kRandom;
  return o;
}

TEST(StandaloneScript, SmallProgramWithTheLeafValues) {
  EXPECT_EQ(render("v0 = leaf [2] seed=1 requires_grad=1\n"
                   "v1 = mul v0 v0\n"
                   "v2 = sum v1\n"
                   "v3 = grad outputs=v2 inputs=v0 grad_outputs=- retain_graph=- create_graph=0 "
                   "allow_unused=0\n"),
            "import torch\n"
            "v0 = torch.tensor([-0.9319765973913072, 0.8280449257406057], dtype=torch.float64, "
            "requires_grad=True)\n"
            "v1 = v0 * v0\n"
            "v2 = torch.sum(v1)\n"
            "v3, = torch.autograd.grad(v2, v0)\n");
}

TEST(StandaloneScript, NestedLeafValues) {
  EXPECT_EQ(render("v0 = leaf [2,3] seed=5 requires_grad=0\n"
                   "v1 = leaf [] seed=5 requires_grad=0\n"
                   "v2 = leaf [0,3] seed=5 requires_grad=1\n"),
            "import torch\n"
            "v0 = torch.tensor([[-0.5101646498947545, 0.38489116974932647, 0.16595209263273047], "
            "[0.6123395620148766, 0.9063092903214116, 0.7532751480055773]], "
            "dtype=torch.float64)\n"
            "v1 = torch.tensor(-0.5101646498947545, dtype=torch.float64)\n"
            "v2 = torch.zeros([0, 3], dtype=torch.float64, requires_grad=True)\n");
}

TEST(StandaloneScript, OpsInPlainPyTorch) {
  EXPECT_EQ(render("v0 = leaf [2,3] seed=1 requires_grad=1\n"
                   "v1 = add_scalar v0 s=0.5\n"
                   "v2 = transpose v1 dim0=0 dim1=1\n"
                   "v3 = sum_dim v2 dim=1 keepdim=1\n"
                   "v4 = exp v3\n"
                   "v5 = sum_to v0 shape=[3]\n"
                   "v6 = log_softmax v0 dim=1\n"
                   "v7 = nll_loss v6 targets=[0,2]\n"
                   "v8 = dropout v0 p=0 seed=3\n",
                   random_leaves()),
            "import torch\n"
            "v0 = torch.rand([2, 3], dtype=torch.float64, requires_grad=True)\n"
            "v1 = torch.ops.aten.add.Scalar(v0, 0.5)\n"
            "v2 = torch.transpose(v1, 0, 1)\n"
            "v3 = torch.sum(v2, 1, keepdim=True)\n"
            "v4 = torch.exp(v3)\n"
            "v5 = v0.sum_to_size([3])\n"
            "v6 = torch.log_softmax(v0, 1)\n"
            "v7 = torch.nn.functional.nll_loss(v6, torch.tensor([0, 2]))\n"
            "v8 = torch.nn.functional.dropout(v0, 0.0)\n");
}

// A crash repro's usual statements: a custom Function, a view of its output, in-place ops (one
// that raised where the program was recorded), backward, .grad.
TEST(StandaloneScript, CustomFunctionViewsInplaceAndBackward) {
  StandaloneOptions o = random_leaves();
  o.raising = {5};
  o.print = {6};
  EXPECT_EQ(render("v0 = leaf [2,2] seed=3 requires_grad=1\n"
                   "v1 = leaf [2,2] seed=4 requires_grad=0\n"
                   "v2 v3 = custom Two v0 v1\n"
                   "v4 = view v2 [4]\n"
                   "add_ v4 v4 no_grad=1\n"
                   "mul_ v3 v1 no_grad=0\n"
                   "v5 = sum v3\n"
                   "backward tensors=v5 grad_tensors=- inputs=v0 retain_graph=1 create_graph=0 ; "
                   "grads v0\n"
                   "v6 = grad_of v0\n",
                   o),
            "import torch\n"
            "\n"
            "\n"
            "class Two(torch.autograd.Function):\n"
            "    @staticmethod\n"
            "    def forward(ctx, a, b):\n"
            "        ctx.save_for_backward(a, b)\n"
            "        return a * b, a + b\n"
            "\n"
            "    @staticmethod\n"
            "    def backward(ctx, g0, g1):\n"
            "        a, b = ctx.saved_tensors\n"
            "        na, nb = ctx.needs_input_grad\n"
            "        return ((g0 * b + g1).sum_to_size(a.shape) if na else None,\n"
            "                (g0 * a + g1).sum_to_size(b.shape) if nb else None)\n"
            "\n"
            "\n"
            "v0 = torch.rand([2, 2], dtype=torch.float64, requires_grad=True)\n"
            "v1 = torch.rand([2, 2], dtype=torch.float64)\n"
            "v2, v3 = Two.apply(v0, v1)\n"
            "v4 = v2.view([4])\n"
            "with torch.no_grad(): v4.add_(v4)\n"
            "try: v3.mul_(v1)\n"
            "except Exception: pass\n"
            "v5 = torch.sum(v3)\n"
            "v5.backward(inputs=v0, retain_graph=True)\n"
            "v6 = v0.grad\n"
            "print(v6)\n");
}

TEST(StandaloneScript, GradAndBackwardWithEveryArgument) {
  EXPECT_EQ(render("v0 = leaf [2] seed=1 requires_grad=1\n"
                   "v1 = leaf [2] seed=2 requires_grad=0\n"
                   "v2 = mul v0 v1\n"
                   "v3 = detach v2\n"
                   "requires_grad_ v3 1\n"
                   "v4 = mul v2 v3\n"
                   "v5 v6 = grad outputs=v4 inputs=v0,v3 grad_outputs=v1 retain_graph=1 "
                   "create_graph=1 allow_unused=1\n"
                   "backward tensors=v4,v2 grad_tensors=-,v1 inputs=- retain_graph=- "
                   "create_graph=0\n"
                   "backward tensors=v4 grad_tensors=v1 inputs=v0,v3 retain_graph=0 "
                   "create_graph=1\n"
                   "set_grad v0\n",
                   random_leaves()),
            "import torch\n"
            "v0 = torch.rand([2], dtype=torch.float64, requires_grad=True)\n"
            "v1 = torch.rand([2], dtype=torch.float64)\n"
            "v2 = v0 * v1\n"
            "v3 = v2.detach()\n"
            "v3.requires_grad_(True)\n"
            "v4 = v2 * v3\n"
            "v5, v6 = torch.autograd.grad(v4, [v0, v3], v1, retain_graph=True, create_graph=True, "
            "allow_unused=True)\n"
            "torch.autograd.backward([v4, v2], [None, v1])\n"
            "v4.backward(v1, inputs=[v0, v3], retain_graph=False, create_graph=True)\n"
            "v0.grad = None\n");
}

// What the recorded run skipped (it read a value a raising statement did not make) is left out.
TEST(StandaloneScript, StatementsAfterARaisingOneThatReadItsResultsAreLeftOut) {
  StandaloneOptions o = random_leaves();
  o.raising = {1, 4};
  EXPECT_EQ(render("v0 = leaf [2] seed=1 requires_grad=1\n"
                   "v1 = view v0 [2]\n"
                   "v2 = exp v1\n"
                   "v3 = exp v0\n"
                   "add_ v0 v3 no_grad=1\n",
                   o),
            "import torch\n"
            "v0 = torch.rand([2], dtype=torch.float64, requires_grad=True)\n"
            "try: v1 = v0.view([2])\n"
            "except Exception: pass\n"
            "v3 = torch.exp(v0)\n"
            "try:\n"
            "    with torch.no_grad(): v0.add_(v3)\n"
            "except Exception:\n"
            "    pass\n");
}

TEST(StandaloneScript, RandomMasksAreAnErrorNamingTheStatement) {
  try {
    render("v0 = leaf [2] seed=1 requires_grad=1\nv1 = dropout v0 p=0.5 seed=3\n");
    FAIL() << "no error";
  } catch (const StandaloneError& e) {
    EXPECT_EQ(std::string(e.what()),
              "statement 1 'v1 = dropout v0 p=0.5 seed=3': dropout with p > 0: its mask is the "
              "engine's, with no plain PyTorch spelling");
  }
}

// A report's style: each custom Function in three lines, and the lines counted for the budget.
TEST(StandaloneScript, CompactFunctionsFitTheLineBudget) {
  StandaloneOptions o = random_leaves();
  o.functions = FunctionStyle::kCompact;
  const std::string script = render(
      "v0 = leaf [] seed=728000 requires_grad=1\n"
      "v1 v2 = custom Two v0 v0\n"
      "v3 v4 = custom Split v2\n"
      "v5 = custom Mul v1 v3\n"
      "add_ v4 v4 no_grad=0\n",
      o);
  EXPECT_EQ(
      script,
      "import torch\n"
      "class Two(torch.autograd.Function):\n"
      "    forward = staticmethod(lambda ctx, a, b: (ctx.save_for_backward(a, b), (a * b, a + "
      "b))[1])\n"
      "    backward = staticmethod(lambda ctx, g0, g1: (lambda a, b: ((g0 * b + "
      "g1).sum_to_size(a.shape), (g0 * a + g1).sum_to_size(b.shape)))(*ctx.saved_tensors))\n"
      "class Split(torch.autograd.Function):\n"
      "    forward = staticmethod(lambda ctx, a: (lambda o: (ctx.mark_non_differentiable(o[1]), "
      "o)[1])((a * 2.0, -a)))\n"
      "    backward = staticmethod(lambda ctx, g0, g1: g0 * 2.0)\n"
      "class Mul(torch.autograd.Function):\n"
      "    forward = staticmethod(lambda ctx, a, b: (ctx.save_for_backward(a, b), a * b)[1])\n"
      "    backward = staticmethod(lambda ctx, g: (lambda a, b: ((g * b).sum_to_size(a.shape), "
      "(g * a).sum_to_size(b.shape)))(*ctx.saved_tensors))\n"
      "v0 = torch.rand([], dtype=torch.float64, requires_grad=True)\n"
      "v1, v2 = Two.apply(v0, v0)\n"
      "v3, v4 = Split.apply(v2)\n"
      "v5 = Mul.apply(v1, v3)\n"
      "v4.add_(v4)\n");
  EXPECT_EQ(script_lines(script), 14);
}

TEST(StandaloneScript, LinesLeaveOutTheImportBlanksAndComments) {
  EXPECT_EQ(script_lines("import torch\n\n# a comment\n  # indented\nx = 1\n    y = 2\n"), 2);
  EXPECT_EQ(script_lines(""), 0);
}

}  // namespace
}  // namespace ag::proptests
