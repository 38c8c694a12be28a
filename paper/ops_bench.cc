// Op-set forward cost vs the same computation written directly in Eigen (float32, CPU, grad mode
// off so no graph is recorded). Each pair of benchmarks runs on the same sizes; the engine's
// version includes everything an op does: argument checks, dispatch and a fresh output.
//   bazel run -c opt //paper:ops_bench
#include <benchmark/benchmark.h>

#include <Eigen/Core>

#include "engine/grad_mode.h"
#include "engine/memory/allocator.h"
#include "ops/ops.h"

namespace {

using ag::Tensor;
using Vec = Eigen::ArrayXf;
using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The CPU allocator tunes glibc's malloc when it is first used (engine/allocator.cc), which also
// speeds up Eigen's own allocations. Set it up before any benchmark runs, so that both sides
// always run under the same malloc settings, whatever the order.
const bool allocator_ready = ag::live_bytes() >= 0;

Tensor input(int64_t n, uint64_t seed) { return ag::ops::uniform({n}, -1, 1, seed); }
Vec eigen_input(int64_t n) { return Vec::Random(n); }

// Elementwise and reductions: ours.
template <typename F>
void ours_unary(benchmark::State& state, F f) {
  ag::NoGradGuard no_grad;
  Tensor a = input(state.range(0), 1);
  for (auto _ : state) benchmark::DoNotOptimize(f(a).raw_data());
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
template <typename F>
void ours_binary(benchmark::State& state, F f) {
  ag::NoGradGuard no_grad;
  Tensor a = input(state.range(0), 1), b = input(state.range(0), 2);
  for (auto _ : state) benchmark::DoNotOptimize(f(a, b).raw_data());
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// The same in Eigen, also into a freshly allocated output each iteration.
template <typename F>
void eigen_unary(benchmark::State& state, F f) {
  Vec a = eigen_input(state.range(0));
  for (auto _ : state) {
    Vec out = f(a);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
template <typename F>
void eigen_binary(benchmark::State& state, F f) {
  Vec a = eigen_input(state.range(0)), b = eigen_input(state.range(0));
  for (auto _ : state) {
    Vec out = f(a, b);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_Add_Ours(benchmark::State& s) {
  ours_binary(s, [](auto& a, auto& b) { return a + b; });
}
void BM_Add_Eigen(benchmark::State& s) {
  eigen_binary(s, [](auto& a, auto& b) { return a + b; });
}
void BM_Mul_Ours(benchmark::State& s) {
  ours_binary(s, [](auto& a, auto& b) { return a * b; });
}
void BM_Mul_Eigen(benchmark::State& s) {
  eigen_binary(s, [](auto& a, auto& b) { return a * b; });
}
void BM_Exp_Ours(benchmark::State& s) {
  ours_unary(s, [](auto& a) { return ag::ops::exp(a); });
}
void BM_Exp_Eigen(benchmark::State& s) {
  eigen_unary(s, [](auto& a) { return a.exp(); });
}
void BM_Relu_Ours(benchmark::State& s) {
  ours_unary(s, [](auto& a) { return ag::ops::relu(a); });
}
void BM_Relu_Eigen(benchmark::State& s) {
  eigen_unary(s, [](auto& a) { return a.max(0.f); });
}

void BM_Sum_Ours(benchmark::State& state) {
  ag::NoGradGuard no_grad;
  Tensor a = input(state.range(0), 1);
  for (auto _ : state) benchmark::DoNotOptimize(ag::ops::sum(a).raw_data());
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
void BM_Sum_Eigen(benchmark::State& state) {
  Vec a = eigen_input(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(a.sum());
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// Square matmuls: mm(a, b) vs a * b; linear(x, w, bias) vs x * w^T + bias.
void BM_Mm_Ours(benchmark::State& state) {
  ag::NoGradGuard no_grad;
  const int64_t n = state.range(0);
  Tensor a = ag::ops::uniform({n, n}, -1, 1, 1), b = ag::ops::uniform({n, n}, -1, 1, 2);
  for (auto _ : state) benchmark::DoNotOptimize(ag::ops::mm(a, b).raw_data());
}
void BM_Mm_Eigen(benchmark::State& state) {
  const int64_t n = state.range(0);
  Mat a = Mat::Random(n, n), b = Mat::Random(n, n);
  for (auto _ : state) {
    Mat out(n, n);
    out.noalias() = a * b;
    benchmark::DoNotOptimize(out.data());
  }
}
void BM_Linear_Ours(benchmark::State& state) {
  ag::NoGradGuard no_grad;
  const int64_t n = state.range(0);
  Tensor x = ag::ops::uniform({n, n}, -1, 1, 1), w = ag::ops::uniform({n, n}, -1, 1, 2);
  Tensor bias = ag::ops::uniform({n}, -1, 1, 3);
  for (auto _ : state) benchmark::DoNotOptimize(ag::ops::linear(x, w, bias).raw_data());
}
void BM_Linear_Eigen(benchmark::State& state) {
  const int64_t n = state.range(0);
  Mat x = Mat::Random(n, n), w = Mat::Random(n, n);
  Eigen::RowVectorXf bias = Eigen::RowVectorXf::Random(n);
  for (auto _ : state) {
    Mat out(n, n);
    out.noalias() = x * w.transpose();
    out.rowwise() += bias;
    benchmark::DoNotOptimize(out.data());
  }
}

#define ELEMENTWISE(name) BENCHMARK(name)->Arg(1000)->Arg(10000)->Arg(100000)->Arg(1000000)
ELEMENTWISE(BM_Add_Ours);
ELEMENTWISE(BM_Add_Eigen);
ELEMENTWISE(BM_Mul_Ours);
ELEMENTWISE(BM_Mul_Eigen);
ELEMENTWISE(BM_Exp_Ours);
ELEMENTWISE(BM_Exp_Eigen);
ELEMENTWISE(BM_Relu_Ours);
ELEMENTWISE(BM_Relu_Eigen);
ELEMENTWISE(BM_Sum_Ours);
ELEMENTWISE(BM_Sum_Eigen);
#define MATMUL(name) BENCHMARK(name)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond)
MATMUL(BM_Mm_Ours);
MATMUL(BM_Mm_Eigen);
MATMUL(BM_Linear_Ours);
MATMUL(BM_Linear_Eigen);

}  // namespace
