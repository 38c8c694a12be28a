// Seed 001's hessian benchmark on a CUDA device (the workload of paper/workloads/hessian.h,
// batch 10000): an MLP (input 16, six hidden Linear+ReLU layers of width 256, output 1),
//   y = mlp(x);  y_x = grad(y, x, create_graph);  y_xx = grad(y_x, x, create_graph)
// timed without and with a final y_xx.sum().backward() into the weights, each with the per-call
// needs_input_grad optimization off and on. Prints milliseconds per step (medians over
// interleaved repetitions), the off/on ratios and the peak device bytes of a step.
// The MLP and the step are paper/workloads/hessian.h's. With ReLU, as in PyTorch, y_xx is zero
// but computed through the graph (threshold_backward); --tanh swaps in tanh layers, whose
// hessian is not zero.
//
// Standalone: built with Bazel (-c opt, linkstatic) and copied to a GPU machine, see README.md.
//   hessian_bench [--batch N] [--reps N] [--warmup N] [--tanh] [--cpu] [--tf32] [--builtin-gemm]
//                 [--tsv FILE]
// --tsv appends the figures to FILE as paper/results/cuda/*.tsv rows (date, device, workload,
// variant, metric, value, unit), which paper/reproduce shows beside the CPU figures.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cuda/cuda.h"
#include "engine/autograd.h"
#include "engine/memory/allocator.h"
#include "engine/options.h"
#include "ops/ops.h"
#include "paper/workloads/hessian.h"

namespace ag {
namespace {

struct Config {
  int batch = 10000;
  int reps = 20;
  int warmup = 3;
  bool cpu = false;
  bool tanh = false;
  std::string tsv;  // append the figures here when set
};

struct Variant {
  bool final_backward;
  bool per_call;
};

EngineOptions options_for(const Variant& v) {
  EngineOptions o;
  o.per_call_needs_input_grad = v.per_call;
  return o;
}

// One row of paper/results/cuda/*.tsv.
void append_row(std::ofstream& out, const std::string& device, const std::string& workload,
                const std::string& variant, const std::string& metric, double value,
                const char* unit) {
  char date[16];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  char number[32];
  std::snprintf(number, sizeof number, std::strcmp(unit, "bytes") == 0 ? "%.0f" : "%.4g", value);
  out << date << '\t' << device << '\t' << workload << '\t' << variant << '\t' << metric << '\t'
      << number << '\t' << unit << '\n';
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int run(const Config& c) {
  const Device device = c.cpu ? kCPU : Device{DeviceType::kCUDA, 0};
  if (!c.cpu && !cuda::is_available()) {
    std::printf("hessian_bench: skipped: %s\n", cuda::unavailable_reason().c_str());
    return 0;
  }
  std::printf("device: %s\n", c.cpu ? "cpu" : cuda::describe_device().c_str());
  std::printf(
      "hessian: MLP 16 -> 6 x (Linear 256 + %s) -> 1, batch %d, float32; median of %d "
      "interleaved steps after %d warm-ups\n",
      c.tanh ? "Tanh" : "ReLU", c.batch, c.reps, c.warmup);
  paper::HessianConfig config;
  config.batch = c.batch;
  config.activation = c.tanh ? paper::Activation::kTanh : paper::Activation::kRelu;
  config.device = device;
  const paper::Mlp mlp = paper::make_mlp(config);
  const Tensor x = paper::make_hessian_input(config);

  const std::vector<Variant> variants = {
      {false, false}, {false, true}, {true, false}, {true, true}};
  std::vector<std::vector<double>> ms(variants.size());
  std::vector<double> checksum(variants.size());
  std::vector<int64_t> peak(variants.size());
  const DeviceType dev = device.type;
  for (int r = 0; r < c.warmup + c.reps; ++r) {
    for (size_t v = 0; v < variants.size(); ++v) {
      OptionsGuard guard(options_for(variants[v]));
      cuda::synchronize();
      const int64_t live_before = live_bytes(dev);
      reset_peak_bytes(dev);
      const auto start = std::chrono::steady_clock::now();
      checksum[v] = paper::hessian_step(mlp, x, variants[v].final_backward);
      const std::chrono::duration<double, std::milli> elapsed =
          std::chrono::steady_clock::now() - start;
      peak[v] = peak_bytes(dev) - live_before;
      if (r >= c.warmup) ms[v].push_back(elapsed.count());
    }
  }

  std::printf("\n%-26s %14s %14s %8s %18s\n", "step", "per-call off", "per-call on", "off/on",
              "peak bytes (on)");
  for (size_t v = 0; v < variants.size(); v += 2) {
    const double off = median(ms[v]), on = median(ms[v + 1]);
    std::printf("%-26s %11.3f ms %11.3f ms %8.2f %18lld\n",
                variants[v].final_backward ? "y_xx + final backward" : "y_xx (two nested grads)",
                off, on, off / on, static_cast<long long>(peak[v + 1]));
  }
  if (!c.tsv.empty()) {
    std::ofstream out(c.tsv, std::ios::app);
    if (!out) {
      std::fprintf(stderr, "hessian_bench: cannot append to %s\n", c.tsv.c_str());
      return 1;
    }
    // The device's name: describe_device() up to its details in parentheses.
    std::string name = c.cpu ? "cpu" : cuda::describe_device();
    name = name.substr(0, name.find(" ("));
    const std::string workload = std::string("hessian (") + (c.tanh ? "Tanh" : "ReLU") +
                                 ", batch " + std::to_string(c.batch) + ")";
    for (size_t v = 0; v < variants.size(); ++v) {
      const std::string variant =
          std::string("ours, per-call needs_input_grad ") + (variants[v].per_call ? "on" : "off");
      const std::string label =
          variants[v].final_backward ? "with final backward" : "no final backward";
      append_row(out, name, workload, variant, "step time, " + label, median(ms[v]), "ms");
      append_row(out, name, workload, variant, "peak bytes above live, " + label,
                 static_cast<double>(peak[v]), "bytes");
    }
  }
  std::printf("peak bytes above the live bytes before the step; live after setup: %lld\n",
              static_cast<long long>(live_bytes(dev)));
  std::printf("anchor (seed 001, H100 + PyTorch 2.11): 2.40 ms and 4.65 ms\n");
  // Per-call needs_input_grad only skips work: results must not change.
  for (size_t v = 0; v < variants.size(); v += 2) {
    if (checksum[v] != checksum[v + 1]) {
      std::printf("MISMATCH: sum(y_xx) %.9g (off) vs %.9g (on)\n", checksum[v], checksum[v + 1]);
      return 1;
    }
  }
  std::printf("sum(y_xx) = %.9g (same with per-call off and on)\n", checksum[1]);
  return 0;
}

}  // namespace
}  // namespace ag

int main(int argc, char** argv) {
  ag::Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (arg == "--batch") {
      c.batch = next();
    } else if (arg == "--reps") {
      c.reps = next();
    } else if (arg == "--warmup") {
      c.warmup = next();
    } else if (arg == "--tanh") {
      c.tanh = true;
    } else if (arg == "--cpu") {
      c.cpu = true;
    } else if (arg == "--tf32") {
      ag::cuda::set_allow_tf32(true);
    } else if (arg == "--builtin-gemm") {
      ag::cuda::set_gemm_backend(ag::cuda::GemmBackend::kBuiltin);
    } else if (arg == "--tsv" && i + 1 < argc) {
      c.tsv = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--batch N] [--reps N] [--warmup N] [--tanh] [--cpu] [--tf32] "
                   "[--builtin-gemm] [--tsv FILE]\n",
                   argv[0]);
      return 2;
    }
  }
  if (c.batch <= 0 || c.reps <= 0 || c.warmup < 0) {
    std::fprintf(stderr, "hessian_bench: --batch and --reps must be positive\n");
    return 2;
  }
  return ag::run(c);
}
