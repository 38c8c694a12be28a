// CUDA graphs of eager steps (Note [Captured steps], cuda/graph.h): a replay gives the eager
// step's results, bit for bit, and follows new values written into the inputs; the memory a
// graph uses is its own while it lives (Note [Graph pools]); a capture that reads the device
// fails cleanly and keeps nothing.
#include "cuda/graph.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda/cuda.h"
#include "cuda/tests/cuda_test_util.h"
#include "cuda/tests/hessian_fixture.h"
#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "ops/ops.h"

namespace ag::cuda {
namespace {

using testing::kCuda;

std::vector<std::vector<double>> weight_grads(const testing::HessianMlp& mlp) {
  std::vector<std::vector<double>> grads;
  for (const Tensor& w : mlp.weights) {
    grads.push_back(w.grad().defined() ? w.grad().to_vector() : std::vector<double>{});
  }
  return grads;
}

TEST(CudaGraph, ReplayGivesTheEagerStepAndFollowsTheInputs) {
  AG_SKIP_WITHOUT_CUDA();
  for (bool tanh : {false, true}) {
    SCOPED_TRACE(tanh ? "tanh" : "relu");
    const testing::HessianSetup setup = testing::small_hessian(kCuda, tanh, 96);
    const testing::HessianMlp& mlp = setup.mlp;
    Tensor x = setup.x;
    const Tensor x2 = ops::uniform(x.shape(), -1, 1, 99, DType::kFloat32, kCuda);

    auto eager = [&] {
      const std::vector<double> y_xx = testing::hessian_step_result(mlp, x, true).to_vector();
      return std::make_pair(y_xx, weight_grads(mlp));
    };
    const auto first = eager();
    Graph graph;
    Tensor y_xx;
    graph.capture([&] { y_xx = testing::hessian_step_result(mlp, x, true); });
    EXPECT_TRUE(graph.captured());
    EXPECT_GT(graph.pool_bytes(), 0);
    graph.replay();
    EXPECT_EQ(y_xx.to_vector(), first.first);
    EXPECT_EQ(weight_grads(mlp), first.second);
    if (tanh) {
      EXPECT_NE(first.first, std::vector<double>(first.first.size(), 0.0));
    }

    // New input values, written in place: the replay computes with them, as the eager step does.
    {
      NoGradGuard no_grad;
      ops::copy_(x, x2);
    }
    graph.replay();
    const std::vector<double> replayed = y_xx.to_vector();
    const std::vector<std::vector<double>> replayed_grads = weight_grads(mlp);
    const auto second = eager();
    EXPECT_EQ(replayed, second.first);
    EXPECT_EQ(replayed_grads, second.second);
    if (tanh) {
      EXPECT_NE(second.first, first.first);
    }
  }
}

// A block the graph used is not handed to a tensor made after the capture, even once the
// graph's own output is gone; it returns to the cache with the graph.
TEST(CudaGraph, ItsMemoryIsItsOwnWhileItLives) {
  AG_SKIP_WITHOUT_CUDA();
  const Tensor a = ops::uniform({257, 33}, -1, 1, 1, DType::kFloat32, kCuda);
  void* block = nullptr;
  {
    Graph graph;
    Tensor out;
    graph.capture([&] { out = ops::exp(a); });
    block = out.raw_data();
    graph.replay();
    EXPECT_EQ(out.to_vector(), ops::exp(a).to_vector());
    const int64_t cached = cached_bytes();
    out = Tensor();  // back to the graph's pool, not to the cache
    EXPECT_EQ(cached_bytes(), cached);
    for (int i = 0; i < 4; ++i) {
      const Tensor t = Tensor::empty({257, 33}, DType::kFloat32, kCuda);
      EXPECT_NE(t.raw_data(), block);
    }
    graph.replay();  // writes its block, which nobody else holds
    synchronize();
  }
  const Tensor reused = Tensor::empty({257, 33}, DType::kFloat32, kCuda);
  EXPECT_EQ(reused.raw_data(), block);  // the cache's last freed block of that size
}

TEST(CudaGraph, ACaptureThatReadsTheDeviceFailsAndKeepsNothing) {
  AG_SKIP_WITHOUT_CUDA();
  const Tensor a = ops::uniform({16}, -1, 1, 2, DType::kFloat32, kCuda);
  Graph graph;
  try {
    graph.capture([&] { ops::sum(a).item(); });
    FAIL() << "capture should have failed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nothing was captured"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(graph.captured());
  EXPECT_THROW(graph.replay(), Error);
  // The stream and the allocator are usable, and the same graph can capture again.
  EXPECT_NEAR(ops::sum(a).item(), ops::sum(ops::to(a, kCPU)).item(), 1e-5);
  Tensor out;
  graph.capture([&] { out = ops::mul(a, a); });
  graph.replay();
  EXPECT_EQ(out.to_vector(), ops::mul(a, a).to_vector());
  EXPECT_THROW(graph.capture([] {}), Error);  // one capture per graph
}

TEST(CudaGraph, AnExceptionInTheWorkKeepsNothing) {
  AG_SKIP_WITHOUT_CUDA();
  const Tensor a = ops::uniform({4, 3}, -1, 1, 3, DType::kFloat32, kCuda);
  Graph graph;
  EXPECT_THROW(graph.capture([&] { ops::mm(a, a); }), Error);  // [4, 3] x [4, 3]
  EXPECT_FALSE(graph.captured());
  EXPECT_EQ(ops::mm(a, ops::transpose(a, 0, 1)).shape(), (Shape{4, 4}));
}

}  // namespace
}  // namespace ag::cuda
