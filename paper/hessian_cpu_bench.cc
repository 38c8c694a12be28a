// `bazel run -c opt //paper:hessian_cpu_bench [-- --reps N --warmup N --only VARIANT --settle MS]`:
// the hessian workload (paper/workloads/hessian.h) on the CPU at batch 1000, ReLU and Tanh, without
// and with the final backward, interleaved (each repetition times every variant once); --settle
// sleeps that long before each step, as reproduce's rounds do (Note [Settle between contenders]).
// Prints one line per figure in the peers' format (paper/peers/common.py), so that
// paper/busy_compare.py can put it beside PyTorch's paper/peers/hessian.py, in the same run and
// under the same competing load.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ops/cpu/isa.h"
#include "ops/cpu/parallel.h"
#include "paper/workloads/hessian.h"
#include "paper/workloads/timing.h"

namespace ag::paper {
namespace {

struct Variant {
  Activation activation;
  bool final_backward;
};

std::string variant_name(const Variant& v) {
  return std::string(activation_name(v.activation)) + (v.final_backward ? "+final" : "");
}

// `only`: run just the variant of that name ("ReLU", "Tanh+final", ...; empty: all), e.g. to
// profile one of them.
int run(int reps, int warmup, const std::string& only, int settle_ms) {
  std::vector<Variant> variants;
  for (Variant v : {Variant{Activation::kRelu, false}, Variant{Activation::kRelu, true},
                    Variant{Activation::kTanh, false}, Variant{Activation::kTanh, true}}) {
    if (only.empty() || variant_name(v) == only) variants.push_back(v);
  }
  if (variants.empty()) {
    std::fprintf(stderr,
                 "hessian_cpu_bench: no variant named '%s' (ReLU, ReLU+final, Tanh, "
                 "Tanh+final)\n",
                 only.c_str());
    return 2;
  }
  std::vector<Mlp> mlps;
  HessianConfig config;
  Tensor x = make_hessian_input(config);
  for (Activation a : {Activation::kRelu, Activation::kTanh}) {
    config.activation = a;
    mlps.push_back(make_mlp(config));
  }
  std::printf("peer\tours, %d threads, %s kernels\n", ops::parallel_threads(),
              ops::cpu_isa_name(ops::selected_cpu_isa()));
  std::vector<std::vector<double>> ms(variants.size());
  double checksum = 0;
  for (int r = 0; r < warmup + reps; ++r) {
    for (size_t v = 0; v < variants.size(); ++v) {
      const Mlp& mlp = mlps[variants[v].activation == Activation::kRelu ? 0 : 1];
      if (settle_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
      const Clock::time_point start = Clock::now();
      checksum += hessian_step(mlp, x, variants[v].final_backward);
      if (r >= warmup) ms[v].push_back(seconds_since(start) * 1e3);
    }
  }
  do_not_optimize(checksum);
  for (size_t v = 0; v < variants.size(); ++v) {
    std::printf(
        "figure\tours\t%s step time, %s\t%.6g\tms\n", activation_name(variants[v].activation),
        variants[v].final_backward ? "with final backward" : "no final backward", median(ms[v]));
  }
  return 0;
}

}  // namespace
}  // namespace ag::paper

int main(int argc, char** argv) {
  int reps = 15, warmup = 3, settle_ms = 0;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (arg == "--warmup" && i + 1 < argc) {
      warmup = std::atoi(argv[++i]);
    } else if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (arg == "--settle" && i + 1 < argc) {
      settle_ms = std::atoi(argv[++i]);
    } else {
      std::fprintf(
          stderr,
          "usage: hessian_cpu_bench [--reps N] [--warmup N] [--only VARIANT] [--settle MS]\n");
      return 2;
    }
  }
  if (reps <= 0 || warmup < 0 || settle_ms < 0) {
    std::fprintf(
        stderr, "hessian_cpu_bench: --reps must be positive, --warmup and --settle not negative\n");
    return 2;
  }
  return ag::paper::run(reps, warmup, only, settle_ms);
}
