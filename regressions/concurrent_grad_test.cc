// Concurrent grad() calls over one shared graph, each thread asking for different inputs, give
// the same answers as sequential calls. Nothing per-call is stored in nodes (Note [Per-call
// view]), so this holds by construction; run it under --config=tsan as well.
#include <gtest/gtest.h>

#include <thread>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "ops/ops.h"

namespace ag {
namespace {

TEST(ConcurrentGrad, ThreadsAgreeWithSequentialCalls) {
  Tensor x = ops::uniform({16, 8}, -1, 1, 1, DType::kFloat64);
  Tensor w1 = ops::uniform({12, 8}, -1, 1, 2, DType::kFloat64);
  Tensor w2 = ops::uniform({1, 12}, -1, 1, 3, DType::kFloat64);
  for (Tensor* t : {&x, &w1, &w2}) t->set_requires_grad(true);
  Tensor h = ops::tanh(ops::linear(x, w1));
  Tensor y = ops::sum(ops::linear(h, w2));
  const TensorList inputs = {x, w1, w2, h};

  std::vector<TensorList> sequential;
  std::vector<int64_t> sequential_formulas;
  for (const Tensor& in : inputs) {
    reset_counters();
    sequential.push_back(grad({y}, {in}, GradArgs().retain_graph()));
    sequential_formulas.push_back(counters().formulas_evaluated);
  }

  constexpr int kThreads = 4, kRounds = 20;
  std::vector<std::vector<std::vector<double>>> got(kThreads);
  std::vector<std::vector<int64_t>> formulas(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const size_t i = static_cast<size_t>(t + r) % inputs.size();
        reset_counters();
        got[t].push_back(grad({y}, {inputs[i]}, GradArgs().retain_graph())[0].to_vector());
        formulas[t].push_back(counters().formulas_evaluated);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    for (int r = 0; r < kRounds; ++r) {
      const size_t i = static_cast<size_t>(t + r) % inputs.size();
      EXPECT_EQ(got[t][r], sequential[i][0].to_vector()) << "thread " << t << " input " << i;
      EXPECT_EQ(formulas[t][r], sequential_formulas[i]);  // per-call work is per call
    }
  }
}

}  // namespace
}  // namespace ag
