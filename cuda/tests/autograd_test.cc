// The published workloads on CUDA against the CPU: the hessian MLP (two nested
// grad(create_graph) and a final backward) and the unrolled-loop SGD (cross entropy, grad with
// create_graph w.r.t. interior tensors). The derivative specs are the CPU's: only the kernels
// differ, so the results must agree.
#include "engine/autograd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cuda/tests/cuda_test_util.h"
#include "cuda/tests/hessian_fixture.h"
#include "engine/counters.h"
#include "ops/ops.h"

namespace ag::cuda {
namespace {

using testing::expect_close;
using testing::kCuda;

struct HessianResult {
  Tensor y, y_x, y_xx;
  TensorList weight_grads;
  int64_t products_of_known_zeros = 0;
};

HessianResult hessian(Device device, bool tanh) {
  const testing::HessianSetup setup = testing::small_hessian(device, tanh);
  const testing::HessianMlp& mlp = setup.mlp;
  const Tensor& x = setup.x;
  HessianResult r;
  reset_counters();
  r.y = mlp.forward(x);
  r.y_x = grad({r.y}, {x}, GradArgs().grad_outputs({ops::ones_like(r.y)}).create_graph())[0];
  r.y_xx = grad({r.y_x}, {x},
                GradArgs().grad_outputs({ops::ones_like(r.y_x)}).create_graph().allow_unused())[0];
  if (r.y_xx.defined()) {
    backward(ops::sum(r.y_xx));
    for (const Tensor& w : mlp.weights) r.weight_grads.push_back(w.grad());
  }
  r.products_of_known_zeros = counters().products_of_known_zeros;
  return r;
}

TEST(CudaAutograd, HessianOfTheMlpMatchesTheCpu) {
  AG_SKIP_WITHOUT_CUDA();
  for (bool tanh : {false, true}) {
    SCOPED_TRACE(tanh ? "tanh" : "relu");
    const HessianResult cpu = hessian(kCPU, tanh), gpu = hessian(kCuda, tanh);
    expect_close(gpu.y, cpu.y, 1e-4);
    expect_close(gpu.y_x, cpu.y_x, 1e-4);
    // relu's derivative goes through threshold_backward, which is differentiable (as in
    // PyTorch): y_xx is defined on both devices, and exactly zero for relu.
    ASSERT_TRUE(cpu.y_xx.defined());
    ASSERT_TRUE(gpu.y_xx.defined());
    expect_close(gpu.y_xx, cpu.y_xx, 1e-4);
    if (!tanh) {
      for (double v : gpu.y_xx.to_vector()) ASSERT_EQ(v, 0.0);
    }
    // The products of relu's zero derivative are written, not multiplied (Note [Known zeros]):
    // one per layer on y_xx's way to x and three more per layer in the final backward (as
    // paper/hessian_zero_products_test.cc counts on the CPU, which scans for them). The CPU
    // multiplies these small products, so the values above compare the two ways.
    EXPECT_EQ(gpu.products_of_known_zeros, tanh ? 0 : 4 * 3);
    ASSERT_EQ(gpu.weight_grads.size(), cpu.weight_grads.size());
    for (size_t i = 0; i < cpu.weight_grads.size(); ++i) {
      ASSERT_EQ(gpu.weight_grads[i].defined(), cpu.weight_grads[i].defined());
      if (tanh) {
        ASSERT_TRUE(cpu.weight_grads[i].defined());
      }
      if (cpu.weight_grads[i].defined()) {
        expect_close(gpu.weight_grads[i], cpu.weight_grads[i], 1e-3);
      }
    }
  }
}

// Seed 000's unrolled loop, a few steps: the parameters of each step are interior tensors of
// one growing graph; the final loss is differentiated back to the initial parameters.
TEST(CudaAutograd, UnrolledLoopMatchesTheCpu) {
  AG_SKIP_WITHOUT_CUDA();
  auto run = [](Device device) {
    Tensor x = ops::uniform({300, 32}, -1, 1, 1, DType::kFloat32, device);
    Tensor w0 = ops::uniform({32, 3}, -0.1, 0.1, 2, DType::kFloat32, device);
    Tensor b0 = ops::zeros({3}, DType::kFloat32, device);
    w0.set_requires_grad(true);
    b0.set_requires_grad(true);
    std::vector<int64_t> targets(300);
    for (size_t i = 0; i < targets.size(); ++i) targets[i] = static_cast<int64_t>(i % 3);
    Tensor w = w0, b = b0;
    std::vector<double> losses;
    for (int step = 0; step < 5; ++step) {
      Tensor loss = ops::cross_entropy(ops::addmm(b, x, w), targets);
      losses.push_back(loss.item());
      TensorList g = grad({loss}, {w, b}, GradArgs().create_graph());
      w = ops::sub(w, ops::mul(g[0], 0.5));
      b = ops::sub(b, ops::mul(g[1], 0.5));
    }
    Tensor final_loss = ops::cross_entropy(ops::addmm(b, x, w), targets);
    backward(final_loss);  // through all five steps to w0 and b0
    return std::make_tuple(losses, final_loss, w0.grad(), b0.grad());
  };
  const auto [cpu_losses, cpu_loss, cpu_gw, cpu_gb] = run(kCPU);
  const auto [gpu_losses, gpu_loss, gpu_gw, gpu_gb] = run(kCuda);
  ASSERT_EQ(cpu_losses.size(), gpu_losses.size());
  for (size_t i = 0; i < cpu_losses.size(); ++i) EXPECT_NEAR(gpu_losses[i], cpu_losses[i], 1e-5);
  EXPECT_LT(cpu_losses.back(), cpu_losses.front());  // it trains
  expect_close(gpu_loss, cpu_loss, 1e-5);
  expect_close(gpu_gw, cpu_gw, 1e-4);
  expect_close(gpu_gb, cpu_gb, 1e-4);
}

}  // namespace
}  // namespace ag::cuda
