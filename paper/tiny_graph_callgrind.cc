// The tiny-graph workload for callgrind (seed 000 reports instruction counts of 100 calls of
// torch.autograd.grad(a*b, [a, b], gradient)). `reproduce` runs
//   valgrind --tool=callgrind --collect-atstart=no --toggle-collect=<measured_calls> this 100 P
// so that only the measured calls are counted, after one warm-up call. P: 1 = pruning on, 0 off.
#include <cstdio>
#include <cstdlib>

#include "engine/options.h"
#include "paper/workloads/tiny_graph.h"

namespace {

// The region callgrind counts (matched by --toggle-collect=measured_calls*).
__attribute__((noinline)) double measured_calls(const ag::paper::TinyGraphInputs& in, int calls) {
  double checksum = 0;
  for (int i = 0; i < calls; ++i) checksum += ag::paper::tiny_graph_call(in);
  return checksum;
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 100;
  const bool pruning = argc > 2 ? std::atoi(argv[2]) != 0 : true;
  ag::EngineOptions options;
  options.prune_by_topo_nr = pruning;
  options.prune_by_reachability = pruning;
  ag::OptionsGuard guard(options);
  const ag::paper::TinyGraphInputs in = ag::paper::make_tiny_graph_inputs();
  double checksum = ag::paper::tiny_graph_call(in);  // warm-up: first-use allocations
  checksum += measured_calls(in, calls);
  std::printf("calls=%d pruning=%d checksum=%g\n", calls, pruning ? 1 : 0, checksum);
  return 0;
}
