// Every user error is an ag::Error with a message naming the API or op and the shapes, and
// leaves the graph usable: a correct call afterwards still works.
#include <gtest/gtest.h>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_values;
using testing::leaf;

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an ag::Error";
  } catch (const Error& e) {
    for (const std::string& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message lacks '" << p << "': " << e.what();
    }
  }
}

struct Graph {
  Tensor a = leaf({1, 2}, {2});
  Tensor b = leaf({3, 4}, {2}, /*requires_grad=*/false);
  Tensor y = ops::mul(a, b);
  Tensor loss = ops::sum(y);
  void expect_still_usable() {
    TensorList g = grad({loss}, {a}, GradArgs().retain_graph());
    expect_values(g[0], {3, 4});
  }
};

TEST(AutogradErrors, InputThatDoesNotRequireGrad) {
  Graph g;
  expect_error([&] { grad({g.loss}, {g.b}); },
               {"grad", "input 0", "float64[2]", "does not require grad"});
  g.expect_still_usable();
}

TEST(AutogradErrors, OutputThatDoesNotRequireGrad) {
  Graph g;
  expect_error([&] { grad({g.b}, {g.a}); }, {"tensor 0", "does not require grad"});
  expect_error([&] { backward(g.b); }, {"backward", "does not require grad"});
  g.expect_still_usable();
}

TEST(AutogradErrors, UnusedInputWithoutAllowUnused) {
  Graph g;
  Tensor other = leaf({1}, {1});
  expect_error([&] { grad({g.loss}, {g.a, other}); }, {"input 1", "allow_unused"});
  g.expect_still_usable();
}

TEST(AutogradErrors, SecondBackwardThroughReleasedGraph) {
  Graph g;
  backward(g.loss);
  expect_error([&] { backward(g.loss); }, {"second time", "'mul'", "retain_graph"});
}

TEST(AutogradErrors, GradOutputsOfWrongShapeOrDtypeOrCount) {
  Graph g;
  expect_error(
      [&] { grad({g.y}, {g.a}, GradArgs().grad_outputs({ops::ones({3}, DType::kFloat64)})); },
      {"gradient 0 has shape [3]", "tensor 0 has shape [2]"});
  expect_error(
      [&] { grad({g.y}, {g.a}, GradArgs().grad_outputs({ops::ones({2}, DType::kFloat32)})); },
      {"dtype float32", "float64"});
  expect_error(
      [&] {
        grad({g.y}, {g.a}, GradArgs().grad_outputs({ops::ones({2}), ops::ones({2})}));
      },
      {"2 gradients for 1 tensors"});
  g.expect_still_usable();
}

TEST(AutogradErrors, NonScalarBackwardWithoutGradTensors) {
  Graph g;
  expect_error([&] { backward(g.y); }, {"implicitly created", "shape [2]"});
  g.expect_still_usable();
}

TEST(AutogradErrors, NoInputs) {
  Graph g;
  expect_error([&] { grad({g.loss}, {}); }, {"no inputs"});
  g.expect_still_usable();
}

TEST(AutogradErrors, OpErrorsNameOpAndShapes) {
  Graph g;
  expect_error([&] { ops::add(g.a, leaf({1, 2, 3}, {3})); }, {"add", "[2]", "[3]", "broadcast"});
  expect_error([&] { ops::mul(g.a, ops::ones({2}, DType::kFloat32)); },
               {"mul", "same dtype", "float64[2]", "float32[2]"});
  expect_error([&] { ops::sum(g.a, 3); }, {"sum", "dim 3", "[2]"});
  g.expect_still_usable();
}

TEST(AutogradErrors, InPlaceOnLeafThatRequiresGrad) {
  Graph g;
  expect_error([&] { ops::add_(g.a, g.b); }, {"add_", "leaf", "float64[2]"});
  g.expect_still_usable();
}

}  // namespace
}  // namespace ag
