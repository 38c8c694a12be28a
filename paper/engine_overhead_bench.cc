// Issue 2: engine overhead on graphs whose kernels cost nothing, with the discovery cuts on and
// off. `bazel run -c opt //paper:engine_overhead_bench`.
//   BM_TinyGraph:   grad(a*b, {a, b}) on 2x2 float32 (PyTorch 1.13.1's C++ API: about 9.4 us)
//   BM_ScalarChain: grad(y.sum(), {x}), y = x * s ... (1000 times), x of 4 elements (about 7.4 ms)
// Both include the forward (every call builds the graph it differentiates).
#include <benchmark/benchmark.h>

#include "engine/options.h"
#include "paper/workloads/tiny_graph.h"

namespace {

ag::EngineOptions options_for(int64_t pruning) {
  ag::EngineOptions o;
  o.prune_by_topo_nr = pruning != 0;
  o.prune_by_reachability = pruning != 0;
  return o;
}

void BM_TinyGraph(benchmark::State& state) {
  ag::OptionsGuard guard(options_for(state.range(0)));
  const ag::paper::TinyGraphInputs in = ag::paper::make_tiny_graph_inputs();
  for (auto _ : state) benchmark::DoNotOptimize(ag::paper::tiny_graph_call(in));
}
BENCHMARK(BM_TinyGraph)->ArgName("pruning")->Arg(0)->Arg(1);

void BM_ScalarChain(benchmark::State& state) {
  ag::OptionsGuard guard(options_for(state.range(0)));
  const ag::paper::ScalarChainInputs in =
      ag::paper::make_scalar_chain_inputs(static_cast<int>(state.range(1)));
  for (auto _ : state) benchmark::DoNotOptimize(ag::paper::scalar_chain_call(in));
  state.SetItemsProcessed(state.iterations() * state.range(1));
}
BENCHMARK(BM_ScalarChain)
    ->ArgNames({"pruning", "length"})
    ->Args({0, 1000})
    ->Args({1, 1000})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
