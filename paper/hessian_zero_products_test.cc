// The hessian workload's products with a zero operand (Note [Products with a zero operand],
// ops/cpu/zero_operand.h): how many the ReLU step writes as zeros, none for Tanh, and the same
// y_xx and weight gradients with the switch off, where every product multiplies.
#include <gtest/gtest.h>

#include <vector>

#include "engine/counters.h"
#include "paper/workloads/hessian.h"

namespace ag::paper {
namespace {

// Every product above the kernels' threshold (1M multiply-adds): batch x hidden x hidden and
// batch x input x hidden are 4.2M and 2.1M.
HessianConfig config(Activation a) {
  HessianConfig c;
  c.batch = 256;
  c.input = 64;
  c.hidden = 128;
  c.layers = 3;
  c.activation = a;
  return c;
}

struct Step {
  double checksum;
  std::vector<std::vector<double>> weight_grads;
  int64_t products_of_zeros;
  int64_t products_of_known_zeros;
};

Step run(const Mlp& mlp, const Tensor& x, bool final_backward, bool skip) {
  OptionsGuard guard(EngineOptions().with_skip_zero_products(skip));
  reset_counters();
  Step s;
  s.checksum = hessian_step(mlp, x, final_backward);
  s.products_of_zeros = counters().products_of_zeros;
  s.products_of_known_zeros = counters().products_of_known_zeros;
  if (final_backward) {
    // The output layer's weight gets no gradient: y_xx does not depend on it.
    for (const Tensor& w : mlp.weights) {
      const Tensor g = w.grad();
      s.weight_grads.push_back(g.defined() ? g.to_vector() : std::vector<double>{});
    }
  }
  return s;
}

// relu's derivative, threshold_backward, has a zero derivative w.r.t. relu's result. y_xx's
// grad multiplies that zero by each hidden layer's weight on its way to x (one product per
// layer, the first layer's [batch, hidden] x [hidden, input] included). The final backward adds
// three per layer: that product's weight gradient (zero^T times the incoming gradient), and,
// where the final backward reaches relu's result in the forward, the same zero derivative again,
// which the forward linear turns into an input gradient and a weight gradient.
TEST(HessianZeroProducts, ReluWritesItsZeroProductsAsZerosWithTheSameResults) {
  const HessianConfig c = config(Activation::kRelu);
  const Mlp mlp = make_mlp(c);
  const Tensor x = make_hessian_input(c);
  for (bool final_backward : {false, true}) {
    const Step skipped = run(mlp, x, final_backward, true);
    const Step multiplied = run(mlp, x, final_backward, false);
    EXPECT_EQ(skipped.products_of_zeros, final_backward ? 4 * c.layers : c.layers);
    // Every zero operand here is zeros by construction, known without a scan (Note [Known
    // zeros]): what the CUDA backend, which cannot scan without waiting, skips as well.
    EXPECT_EQ(skipped.products_of_known_zeros, skipped.products_of_zeros);
    EXPECT_EQ(multiplied.products_of_zeros, 0);
    EXPECT_EQ(multiplied.products_of_known_zeros, 0);
    EXPECT_EQ(skipped.checksum, 0.0);  // relu's second derivative is zero
    EXPECT_EQ(multiplied.checksum, 0.0);
    EXPECT_EQ(skipped.weight_grads, multiplied.weight_grads);
    if (final_backward) {
      ASSERT_EQ(skipped.weight_grads.size(), static_cast<size_t>(c.layers + 1));
      EXPECT_FALSE(skipped.weight_grads[0].empty());  // the final backward reached the weights
      EXPECT_TRUE(skipped.weight_grads.back().empty());
      // y_xx is zero wherever relu's masks hold still, so its gradient w.r.t. every weight is.
      for (const std::vector<double>& g : skipped.weight_grads) {
        for (double v : g) ASSERT_EQ(v, 0.0);
      }
    }
  }
}

TEST(HessianZeroProducts, TanhHasNone) {
  const HessianConfig c = config(Activation::kTanh);
  const Mlp mlp = make_mlp(c);
  const Tensor x = make_hessian_input(c);
  for (bool final_backward : {false, true}) {
    const Step skipped = run(mlp, x, final_backward, true);
    const Step multiplied = run(mlp, x, final_backward, false);
    EXPECT_EQ(skipped.products_of_zeros, 0);
    EXPECT_NE(skipped.checksum, 0.0);
    EXPECT_EQ(skipped.checksum, multiplied.checksum);
    EXPECT_EQ(skipped.weight_grads, multiplied.weight_grads);
  }
}

}  // namespace
}  // namespace ag::paper
