// One compiled graph run from several threads at once: the executor's Code and a group's
// gradient graphs are shared (derived once, on whichever thread runs a group first, under the
// group's lock), the frames and autograd graphs are each run's own. CI runs this test under
// ThreadSanitizer too (tag "concurrency").
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "engine/autograd.h"
#include "engine/jit/create_autodiff_subgraphs.h"
#include "engine/jit/executor.h"
#include "engine/jit/tracer.h"
#include "ops/ops.h"

namespace ag::jit {
namespace {

// An MLP step with a loss (the hessian workload's shape of program) and a value it also returns.
TensorList program(const TensorList& in) {
  Tensor h = ops::tanh(ops::addmm(in[2], in[0], in[1]));
  Tensor y = ops::mul(h, h);
  return {ops::sum(ops::sigmoid(y)), h};
}

TensorList inputs(uint64_t seed) {
  Tensor x = ops::uniform({4, 3}, -1, 1, seed);
  Tensor w = ops::uniform({3, 5}, -1, 1, seed + 1);
  Tensor b = ops::uniform({5}, -1, 1, seed + 2);
  x.set_requires_grad(true);
  w.set_requires_grad(true);
  return {x, w, b};
}

// The loss, its gradients for x and w (create_graph) and the second-order gradients of the sum
// of their squares, as exact values.
std::vector<std::vector<double>> observe(const GraphExecutor& exec, uint64_t seed) {
  const TensorList in = inputs(seed);
  const Tensor loss = exec.run(in)[0];
  const TensorList first = grad({loss}, {in[0], in[1]}, GradArgs().create_graph());
  const Tensor second =
      ops::add(ops::sum(ops::mul(first[0], first[0])), ops::sum(ops::mul(first[1], first[1])));
  const TensorList g2 = grad({second}, {in[0], in[1]});
  return {loss.to_vector(), first[0].to_vector(), first[1].to_vector(), g2[0].to_vector(),
          g2[1].to_vector()};
}

TEST(ExecutorConcurrencyTest, ThreadsShareOneCompiledGraph) {
  std::unique_ptr<Graph> g = trace(program, inputs(1));
  createAutodiffSubgraphs(*g);
  ASSERT_NE(toString(*g).find("prim::DifferentiableGraph"), std::string::npos);
  constexpr int kThreads = 4;
  // What each thread must compute, from one executor per thread (nothing shared).
  std::vector<std::vector<std::vector<double>>> expected(kThreads), got(kThreads);
  for (int t = 0; t < kThreads; ++t) expected[t] = observe(GraphExecutor(*g), 10 * t + 1);
  // Then one executor for all: its groups derive their gradient graphs during the race.
  const GraphExecutor shared(*g);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) got[t] = observe(shared, 10 * t + 1);
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(got[t], expected[t]) << "thread " << t;
}

}  // namespace
}  // namespace ag::jit
