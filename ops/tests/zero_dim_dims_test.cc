// Dims of a 0-dim tensor (Note [Dims of a 0-dim tensor], ops/checks.h): every dim-taking op takes
// dim 0 and -1 and refuses any other, as PyTorch 2.15 does. Values and gradients pinned to it:
//   x = torch.tensor(0.75, dtype=torch.float64, requires_grad=True)
//   x.sum(0), x.sum(-1, keepdim=True), x.mean(0), x.mean(-1, keepdim=True): 0.75, shape [], grad 1
//   x.transpose(0, -1), x.transpose(-1, -1): 0.75, shape [], grad 1
//   torch.log_softmax(x, 0), torch.log_softmax(x, -1): 0.0, shape [], grad 0
//   x.sum(1), x.mean(-2), x.transpose(0, 1), torch.log_softmax(x, 1): IndexError "Dimension out of
//   range (expected to be in range of [-1, 0], but got 1)"
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/autograd.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::error_of;
using testing::expect_values;
using testing::leaf;

struct DimOp {
  const char* name;
  std::function<Tensor(const Tensor&, int64_t)> call;
  double value;     // at x = 0.75
  double gradient;  // d op(x) / dx
};

std::vector<DimOp> dim_ops() {
  return {
      {"sum", [](const Tensor& x, int64_t d) { return ops::sum(x, d); }, 0.75, 1.0},
      {"sum", [](const Tensor& x, int64_t d) { return ops::sum(x, d, true); }, 0.75, 1.0},
      {"mean", [](const Tensor& x, int64_t d) { return ops::mean(x, d); }, 0.75, 1.0},
      {"mean", [](const Tensor& x, int64_t d) { return ops::mean(x, d, true); }, 0.75, 1.0},
      {"transpose", [](const Tensor& x, int64_t d) { return ops::transpose(x, 0, d); }, 0.75, 1.0},
      {"transpose", [](const Tensor& x, int64_t d) { return ops::transpose(x, d, d); }, 0.75, 1.0},
      {"log_softmax", [](const Tensor& x, int64_t d) { return ops::log_softmax(x, d); }, 0.0, 0.0},
  };
}

TEST(ZeroDimDims, DimsZeroAndMinusOneWrapAsForOneDimension) {
  for (const DimOp& op : dim_ops()) {
    for (int64_t dim : {0, -1}) {
      SCOPED_TRACE(std::string(op.name) + " dim " + std::to_string(dim));
      const Tensor x = leaf({0.75}, {});
      const Tensor y = op.call(x, dim);
      EXPECT_EQ(y.shape(), Shape{});
      expect_values(y, {op.value});
      expect_values(grad({y}, {x}, GradArgs().retain_graph())[0], {op.gradient});
      // Second order through the formulas, which take the same dims on 0-dim gradients.
      const Tensor g = grad({y}, {x}, GradArgs().create_graph())[0];
      if (g.requires_grad()) expect_values(grad({g}, {x}, GradArgs().allow_unused())[0], {0.0});
    }
  }
}

TEST(ZeroDimDims, OtherDimsRaiseNamingOpAndShape) {
  for (const DimOp& op : dim_ops()) {
    for (int64_t dim : {1, -2, 5}) {
      const Tensor x = leaf({0.75}, {});
      const std::string message = error_of([&] { op.call(x, dim); });
      for (const std::string& part : {std::string(op.name), "dim " + std::to_string(dim),
                                      std::string("shape []"), std::string("[-1, 0]")}) {
        EXPECT_NE(message.find(part), std::string::npos)
            << op.name << " dim " << dim << ": message lacks '" << part << "': " << message;
      }
    }
  }
}

// The kernels see the [1] alias; the input's own shape and value are untouched.
TEST(ZeroDimDims, TheInputKeepsItsShape) {
  const Tensor x = leaf({0.75}, {}, false);
  ops::transpose(x, 0, 0);
  ops::log_softmax(x, -1);
  EXPECT_EQ(x.shape(), Shape{});
  expect_values(x, {0.75});
}

}  // namespace
}  // namespace ag
