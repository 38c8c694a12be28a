#include <benchmark/benchmark.h>

#include <vector>

static void BM_Sum(benchmark::State& state) {
  std::vector<int> v(1000, 1);
  for (auto _ : state) {
    int s = 0;
    for (int x : v) s += x;
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_Sum);
