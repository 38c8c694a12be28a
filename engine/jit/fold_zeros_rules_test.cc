// Note [Structural zeros], one rule at a time: each op of the zero folding with one structurally
// zero operand (zeros_like of an input, or a captured constant of zeros) in each position, the
// positions in which a zero makes the result zero folded and the others left, and the folded graph
// run on other inputs against the eager program. A rule that folds too much changes a value (a
// division by zero, a bias, a term of a sum); one that folds too little leaves its op in the graph.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "engine/jit/executor.h"
#include "engine/jit/fold_zeros.h"
#include "engine/jit/tracer.h"
#include "ops/fused.h"
#include "ops/ops.h"

namespace ag::jit {
namespace {

using Program = std::function<Tensor(const TensorList&)>;

// x [3, 4], w [4, 4], y [3, 4], bias [4], b3 [2, 3, 4], bw [2, 4, 4], z [3, 4]: float64, away
// from zero so that no eager result is zero by chance.
TensorList inputs(uint64_t seed) {
  auto t = [&](const Shape& s, uint64_t k) {
    return ops::uniform(s, 0.5, 1.5, seed * 10 + k, DType::kFloat64);
  };
  return {t({3, 4}, 0),    t({4, 4}, 1),    t({3, 4}, 2), t({4}, 3),
          t({2, 3, 4}, 4), t({2, 4, 4}, 5), t({3, 4}, 6)};
}
enum { X, W, Y, B, B3, BW, Z };

int countNodes(const Graph& g, const std::string& kind) {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->kind() == kind;
  return n;
}

bool sameValue(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Traces `program` on one set of inputs, folds and drops the dead, then checks that the op
// `kind` is gone (folded) or still there, and that the graph computes what the program computes
// on other inputs (zeros of either sign being equal: Note [Structural zeros]).
void expectRule(const std::string& name, const std::string& kind, const Program& program,
                bool folded) {
  SCOPED_TRACE(name);
  std::vector<std::optional<TensorMeta>> metas;
  std::unique_ptr<Graph> graph;
  {
    const TensorList in = inputs(1);
    TracingScope scope(in);
    graph = scope.finish({program(in)}, &metas);
  }
  ASSERT_EQ(countNodes(*graph, kind), 1) << "the program runs " << kind << " once";
  foldStructuralZeros(*graph, metas);
  eliminateDeadCode(*graph);
  EXPECT_EQ(countNodes(*graph, kind), folded ? 0 : 1)
      << (folded ? "not folded: " : "folded: ") << kind;
  const TensorList other = inputs(2);
  const Tensor want = program(other);
  const Tensor got = GraphExecutor(*graph).run(other)[0];
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<double> g = got.to_vector(), w = want.to_vector();
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_TRUE(sameValue(g[i], w[i])) << "element " << i << ": " << g[i] << " vs eager " << w[i];
  }
  if (folded) {
    for (double v : g) EXPECT_EQ(v, 0.0);
  }
}

Tensor zerosOf(const Tensor& t) { return ops::zeros_like(t); }

TEST(FoldZerosRules, ProductsFoldWithAZeroInEitherFactor) {
  expectRule(
      "mul(0, y)", "aten::mul", [](auto& in) { return ops::mul(zerosOf(in[X]), in[Y]); }, true);
  expectRule(
      "mul(y, 0)", "aten::mul", [](auto& in) { return ops::mul(in[Y], zerosOf(in[X])); }, true);
  expectRule(
      "mul(x, y)", "aten::mul", [](auto& in) { return ops::mul(in[X], in[Y]); }, false);
  expectRule(
      "mul_scalar(0)", "aten::mul_scalar", [](auto& in) { return ops::mul(zerosOf(in[X]), 2.5); },
      true);
  expectRule(
      "mm(0, w)", "aten::mm", [](auto& in) { return ops::mm(zerosOf(in[X]), in[W]); }, true);
  expectRule(
      "mm(x, 0)", "aten::mm", [](auto& in) { return ops::mm(in[X], zerosOf(in[W])); }, true);
  expectRule(
      "mm(x, w)", "aten::mm", [](auto& in) { return ops::mm(in[X], in[W]); }, false);
  expectRule(
      "bmm(0, bw)", "aten::bmm", [](auto& in) { return ops::bmm(zerosOf(in[B3]), in[BW]); }, true);
  expectRule(
      "bmm(b3, 0)", "aten::bmm", [](auto& in) { return ops::bmm(in[B3], zerosOf(in[BW])); }, true);
  expectRule(
      "bmm(b3, bw)", "aten::bmm", [](auto& in) { return ops::bmm(in[B3], in[BW]); }, false);
  expectRule(
      "matmul(0, w)", "aten::mm", [](auto& in) { return ops::matmul(zerosOf(in[X]), in[W]); },
      true);
  expectRule(
      "matmul(x, 0)", "aten::mm", [](auto& in) { return ops::matmul(in[X], zerosOf(in[W])); },
      true);
  expectRule(
      "matmul(x, w)", "aten::mm", [](auto& in) { return ops::matmul(in[X], in[W]); }, false);
}

TEST(FoldZerosRules, ADivisionFoldsOnlyAZeroNumerator) {
  expectRule(
      "div(0, y)", "aten::div", [](auto& in) { return ops::div(zerosOf(in[X]), in[Y]); }, true);
  // y / 0 is infinite: not zero.
  expectRule(
      "div(y, 0)", "aten::div", [](auto& in) { return ops::div(in[Y], zerosOf(in[X])); }, false);
}

TEST(FoldZerosRules, ActivationBackwardsFoldOnlyAZeroGradient) {
  expectRule(
      "threshold_backward(0, y)", "aten::threshold_backward",
      [](auto& in) { return ops::threshold_backward(zerosOf(in[X]), in[Y]); }, true);
  expectRule(
      "threshold_backward(y, 0)", "aten::threshold_backward",
      [](auto& in) { return ops::threshold_backward(in[Y], zerosOf(in[X])); }, false);
  expectRule(
      "tanh_backward(0, y)", "aten::tanh_backward",
      [](auto& in) { return ops::tanh_backward(zerosOf(in[X]), in[Y]); }, true);
  // grad (1 - 0^2) is the gradient itself.
  expectRule(
      "tanh_backward(y, 0)", "aten::tanh_backward",
      [](auto& in) { return ops::tanh_backward(in[Y], zerosOf(in[X])); }, false);
}

// grad (1 - result) result is a product: zero where either factor is (as mul's rule).
TEST(FoldZerosRules, SigmoidBackwardFoldsWithAZeroInEitherOperand) {
  expectRule(
      "sigmoid_backward(0, y)", "aten::sigmoid_backward",
      [](auto& in) { return ops::sigmoid_backward(zerosOf(in[X]), in[Y]); }, true);
  expectRule(
      "sigmoid_backward(y, 0)", "aten::sigmoid_backward",
      [](auto& in) { return ops::sigmoid_backward(in[Y], zerosOf(in[X])); }, true);
}

TEST(FoldZerosRules, AScaledProductFoldsWithAZeroInAnyOperand) {
  for (int at = -1; at < 3; ++at) {
    expectRule(
        "scaled_product zero at " + std::to_string(at), "aten::scaled_product",
        [at](auto& in) {
          Tensor ops3[3] = {in[X], in[Y], in[Z]};
          if (at >= 0) ops3[at] = zerosOf(ops3[at]);
          return ops::scaled_product(ops3[0], ops3[1], ops3[2], 0.5);
        },
        at >= 0);
  }
}

// A sum is zero only when every term is: one zero term leaves the other.
TEST(FoldZerosRules, SumsFoldOnlyWhenEveryTermIsZero) {
  expectRule(
      "add(0, y)", "aten::add", [](auto& in) { return ops::add(zerosOf(in[X]), in[Y]); }, false);
  expectRule(
      "add(y, 0)", "aten::add", [](auto& in) { return ops::add(in[Y], zerosOf(in[X])); }, false);
  expectRule(
      "add(0, 0)", "aten::add", [](auto& in) { return ops::add(zerosOf(in[X]), zerosOf(in[Y])); },
      true);
  expectRule(
      "sub(0, y)", "aten::sub", [](auto& in) { return ops::sub(zerosOf(in[X]), in[Y]); }, false);
  expectRule(
      "sub(y, 0)", "aten::sub", [](auto& in) { return ops::sub(in[Y], zerosOf(in[X])); }, false);
  expectRule(
      "sub(0, 0)", "aten::sub", [](auto& in) { return ops::sub(zerosOf(in[X]), zerosOf(in[Y])); },
      true);
}

// addmm(bias, mat1, mat2) is bias + mat1 mat2: zero when a factor is zero and so is the bias.
TEST(FoldZerosRules, AddmmFoldsOnlyAZeroProductWithAZeroBias) {
  expectRule(
      "addmm(b, 0, w)", "aten::addmm",
      [](auto& in) { return ops::addmm(in[B], zerosOf(in[X]), in[W]); }, false);
  expectRule(
      "addmm(b, x, 0)", "aten::addmm",
      [](auto& in) { return ops::addmm(in[B], in[X], zerosOf(in[W])); }, false);
  expectRule(
      "addmm(0, x, w)", "aten::addmm",
      [](auto& in) { return ops::addmm(zerosOf(in[B]), in[X], in[W]); }, false);
  expectRule(
      "addmm(0, 0, w)", "aten::addmm",
      [](auto& in) { return ops::addmm(zerosOf(in[B]), zerosOf(in[X]), in[W]); }, true);
  expectRule(
      "addmm(0, x, 0)", "aten::addmm",
      [](auto& in) { return ops::addmm(zerosOf(in[B]), in[X], zerosOf(in[W])); }, true);
}

// linear(input, weight, bias): zero when input or weight is, and the bias is zero or absent.
TEST(FoldZerosRules, LinearFoldsOnlyAZeroProductWithAZeroOrNoBias) {
  expectRule(
      "linear(0, w)", "aten::linear", [](auto& in) { return ops::linear(zerosOf(in[X]), in[W]); },
      true);
  expectRule(
      "linear(x, 0)", "aten::linear", [](auto& in) { return ops::linear(in[X], zerosOf(in[W])); },
      true);
  expectRule(
      "linear(x, w)", "aten::linear", [](auto& in) { return ops::linear(in[X], in[W]); }, false);
  expectRule(
      "linear(0, w, b)", "aten::linear",
      [](auto& in) { return ops::linear(zerosOf(in[X]), in[W], in[B]); }, false);
  expectRule(
      "linear(x, 0, b)", "aten::linear",
      [](auto& in) { return ops::linear(in[X], zerosOf(in[W]), in[B]); }, false);
  expectRule(
      "linear(x, w, 0)", "aten::linear",
      [](auto& in) { return ops::linear(in[X], in[W], zerosOf(in[B])); }, false);
  expectRule(
      "linear(0, w, 0)", "aten::linear",
      [](auto& in) { return ops::linear(zerosOf(in[X]), in[W], zerosOf(in[B])); }, true);
  expectRule(
      "linear(x, 0, 0)", "aten::linear",
      [](auto& in) { return ops::linear(in[X], zerosOf(in[W]), zerosOf(in[B])); }, true);
}

TEST(FoldZerosRules, LinearOneOperandOpsFoldAZeroOperand) {
  struct Case {
    const char* kind;
    Program zero, nonzero;
  };
  const Case cases[] = {
      {"aten::neg", [](auto& in) { return ops::neg(zerosOf(in[X])); },
       [](auto& in) { return ops::neg(in[X]); }},
      {"aten::sum", [](auto& in) { return ops::sum(zerosOf(in[X])); },
       [](auto& in) { return ops::sum(in[X]); }},
      {"aten::sum_dim", [](auto& in) { return ops::sum(zerosOf(in[X]), 1); },
       [](auto& in) { return ops::sum(in[X], 1); }},
      {"aten::sum_to", [](auto& in) { return ops::sum_to(zerosOf(in[X]), {4}); },
       [](auto& in) { return ops::sum_to(in[X], {4}); }},
      {"aten::broadcast_to",
       [](auto& in) {
         return ops::broadcast_to(zerosOf(in[B]), {3, 4});
       },
       [](auto& in) {
         return ops::broadcast_to(in[B], {3, 4});
       }},
      {"aten::reshape", [](auto& in) { return ops::reshape(zerosOf(in[X]), {12}); },
       [](auto& in) { return ops::reshape(in[X], {12}); }},
      {"aten::transpose", [](auto& in) { return ops::transpose(zerosOf(in[X]), 0, 1); },
       [](auto& in) { return ops::transpose(in[X], 0, 1); }},
      {"aten::clone", [](auto& in) { return ops::clone(zerosOf(in[X])); },
       [](auto& in) { return ops::clone(in[X]); }},
      {"aten::detach", [](auto& in) { return ops::detach(zerosOf(in[X])); },
       [](auto& in) { return ops::detach(in[X]); }},
  };
  for (const Case& c : cases) {
    expectRule(std::string(c.kind) + " of zeros", c.kind, c.zero, true);
    expectRule(std::string(c.kind) + " of x", c.kind, c.nonzero, false);
  }
}

// mean is an op of its own (Note [mean's gradient is a new tensor], ops/reduce.cc), linear too.
TEST(FoldZerosRules, MeanFoldsAZeroOperand) {
  expectRule(
      "mean of zeros", "aten::mean", [](auto& in) { return ops::mean(zerosOf(in[X])); }, true);
  expectRule(
      "mean of x", "aten::mean", [](auto& in) { return ops::mean(in[X]); }, false);
  expectRule(
      "mean_dim of zeros", "aten::mean_dim", [](auto& in) { return ops::mean(zerosOf(in[X]), 0); },
      true);
  expectRule(
      "mean_dim of x", "aten::mean_dim", [](auto& in) { return ops::mean(in[X], 0); }, false);
}

// A captured tensor is a constant: zero only if every element is.
TEST(FoldZerosRules, ACapturedConstantIsZeroOnlyIfEveryElementIs) {
  const Tensor all_zero = ops::from_vector(std::vector<double>(12, 0.0), {3, 4}, DType::kFloat64);
  std::vector<double> last_nonzero(12, 0.0);
  last_nonzero[11] = 3.0;
  const Tensor one_nonzero = ops::from_vector(last_nonzero, {3, 4}, DType::kFloat64);
  expectRule(
      "mul(zero constant, y)", "aten::mul", [&](auto& in) { return ops::mul(all_zero, in[Y]); },
      true);
  expectRule(
      "mul(constant with a 3 last, y)", "aten::mul",
      [&](auto& in) { return ops::mul(one_nonzero, in[Y]); }, false);
}

// A write in place could make a zero not zero: such a graph folds nothing.
TEST(FoldZerosRules, AGraphThatWritesInPlaceFoldsNothing) {
  std::vector<std::optional<TensorMeta>> metas;
  std::unique_ptr<Graph> graph;
  const TensorList in = inputs(1);
  {
    TracingScope scope(in);
    Tensor zero = ops::zeros_like(in[X]);
    ops::add_(zero, in[Y]);
    graph = scope.finish({ops::mul(zero, in[Z])}, &metas);
  }
  EXPECT_EQ(foldStructuralZeros(*graph, metas), 0);
  EXPECT_EQ(countNodes(*graph, "aten::mul"), 1);
  const TensorList other = inputs(2);
  const Tensor got = GraphExecutor(*graph).run(other)[0];
  const Tensor want = ops::mul(ops::add(ops::zeros_like(other[X]), other[Y]), other[Z]);
  EXPECT_EQ(got.to_vector(), want.to_vector());
}

}  // namespace
}  // namespace ag::jit
