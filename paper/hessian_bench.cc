// Seed 001's hessian benchmark on a CUDA device (the workload of paper/workloads/hessian.h,
// batch 10000): an MLP (input 16, six hidden Linear+ReLU layers of width 256, output 1),
//   y = mlp(x);  y_x = grad(y, x, create_graph);  y_xx = grad(y_x, x, create_graph)
// timed without and with a final y_xx.sum().backward() into the weights, each with the per-call
// needs_input_grad optimization off and on, each run eagerly and replayed from a CUDA graph of
// the eager step captured after the warm-ups (Note [Captured steps], cuda/graph.h). Prints
// milliseconds per step (medians over interleaved repetitions), the off/on ratios, the peak
// device bytes of a step and the products written without multiplying (Note [Known zeros]).
// The MLP and the step are paper/workloads/hessian.h's. With ReLU, as in PyTorch, y_xx is zero
// but computed through the graph (threshold_backward); --tanh swaps in tanh layers, whose
// hessian is not zero.
//
// Standalone: built with Bazel (-c opt, linkstatic) and copied to a GPU machine, see
// cuda/README.md. It lives in paper/ with the other benchmarks (cuda/ does not depend on paper/).
//   hessian_bench [--batch N] [--reps N] [--warmup N] [--tanh] [--cpu] [--tf32] [--builtin-gemm]
//                 [--no-graphs] [--per-call on|off] [--final yes|no] [--tsv FILE]
// --per-call and --final pick variants (for a profiler's run: no table then).
// --tsv appends the figures to FILE as paper/results/cuda/*.tsv rows (date, device, workload,
// variant, metric, value, unit), which paper/reproduce shows beside the CPU figures.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda.h"
#include "cuda/graph.h"
#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/memory/allocator.h"
#include "engine/options.h"
#include "ops/ops.h"
#include "paper/workloads/hessian.h"
#include "paper/workloads/timing.h"

namespace ag {
namespace {

struct Config {
  int batch = 10000;
  int reps = 20;
  int warmup = 3;
  bool cpu = false;
  bool tanh = false;
  bool graphs = true;  // also time each variant captured as a CUDA graph (Note [Captured steps])
  // Which variants run: per-call needs_input_grad off/on, final backward without/with (both by
  // default; a profiler run picks one).
  bool per_call[2] = {true, true};
  bool final_backward[2] = {true, true};
  std::string tsv;  // append the figures here when set
};

struct Variant {
  bool final_backward;
  bool per_call;
  bool captured;  // replayed from a CUDA graph captured after the warm-ups
};

EngineOptions options_for(const Variant& v) {
  EngineOptions o;
  o.per_call_needs_input_grad = v.per_call;
  return o;
}

const char* step_name(bool final_backward) {
  return final_backward ? "y_xx + final backward" : "y_xx (two nested grads)";
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

// The variants' figures, index-aligned with the variants.
struct Figures {
  std::vector<std::vector<double>> ms;
  std::vector<double> checksum;
  std::vector<int64_t> peak;
  std::vector<int64_t> zero_products;  // products written without multiplying (eager steps)
};

// The index of the variant with these flags, or -1.
int find(const std::vector<Variant>& variants, bool final_backward, bool per_call, bool captured) {
  for (size_t v = 0; v < variants.size(); ++v) {
    const Variant& x = variants[v];
    if (x.final_backward == final_backward && x.per_call == per_call && x.captured == captured) {
      return static_cast<int>(v);
    }
  }
  return -1;
}

void print_table(const std::vector<Variant>& variants, const Figures& f, bool captured) {
  std::printf("\n%-26s %14s %14s %8s %18s %14s\n", captured ? "captured (CUDA graph)" : "eager",
              "per-call off", "per-call on", "off/on", "peak bytes (on)", "zero products");
  for (bool fb : {false, true}) {
    const int off = find(variants, fb, false, captured), on = find(variants, fb, true, captured);
    if (off < 0 || on < 0) continue;
    const double t_off = paper::median(f.ms[off]), t_on = paper::median(f.ms[on]);
    // A replay runs no host code: its products of zeros are the captured step's, uncounted.
    const std::string zero_products = captured ? "as eager" : std::to_string(f.zero_products[on]);
    std::printf("%-26s %11.3f ms %11.3f ms %8.2f %18lld %14s\n", step_name(fb), t_off, t_on,
                t_off / t_on, static_cast<long long>(f.peak[on]), zero_products.c_str());
  }
}

int write_tsv(const Config& c, const std::vector<Variant>& variants, const Figures& f) {
  std::ofstream out(c.tsv, std::ios::app);
  if (!out) {
    std::fprintf(stderr, "hessian_bench: cannot append to %s\n", c.tsv.c_str());
    return 1;
  }
  // The device's name: describe_device() up to its details in parentheses.
  std::string name = c.cpu ? "cpu" : cuda::describe_device();
  name = name.substr(0, name.find(" ("));
  const std::string workload = std::string("hessian (") + (c.tanh ? "Tanh" : "ReLU") + ", batch " +
                               std::to_string(c.batch) + ")";
  for (size_t v = 0; v < variants.size(); ++v) {
    const std::string variant =
        std::string(variants[v].captured ? "ours captured (CUDA graph)" : "ours") +
        ", per-call needs_input_grad " + (variants[v].per_call ? "on" : "off") +
        (cuda::allow_tf32() ? ", TF32" : "");
    const std::string label =
        variants[v].final_backward ? "with final backward" : "no final backward";
    append_row(out, name, workload, variant, "step time, " + label, paper::median(f.ms[v]), "ms");
    if (!variants[v].captured) {
      append_row(out, name, workload, variant, "peak bytes above live, " + label,
                 static_cast<double>(f.peak[v]), "bytes");
    }
  }
  return 0;
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

  std::vector<Variant> variants;
  for (bool captured : {false, true}) {
    if (captured && (c.cpu || !c.graphs)) continue;
    for (bool final_backward : {false, true}) {
      for (bool per_call : {false, true}) {
        if (c.final_backward[final_backward] && c.per_call[per_call]) {
          variants.push_back({final_backward, per_call, captured});
        }
      }
    }
  }
  const size_t n = variants.size();
  Figures f{std::vector<std::vector<double>>(n), std::vector<double>(n), std::vector<int64_t>(n),
            std::vector<int64_t>(n)};
  const DeviceType dev = device.type;
  // Captured variants: one graph each, captured after the eager warm-ups (which made every
  // product shape's plan), holding y_xx of its replays.
  std::vector<std::unique_ptr<cuda::Graph>> graphs(n);
  std::vector<Tensor> replayed(n);
  for (int r = 0; r < c.warmup + c.reps; ++r) {
    if (r == c.warmup) {
      cuda::profiler_start();  // a profiler sees the timed steps (and captures) only
      for (size_t v = 0; v < n; ++v) {
        if (!variants[v].captured) continue;
        OptionsGuard guard(options_for(variants[v]));
        graphs[v] = std::make_unique<cuda::Graph>();
        graphs[v]->capture(
            [&] { replayed[v] = paper::hessian_step_result(mlp, x, variants[v].final_backward); });
        graphs[v]->replay();  // the first results (a capture runs nothing)
      }
    }
    for (size_t v = 0; v < n; ++v) {
      if (variants[v].captured && r < c.warmup) continue;
      OptionsGuard guard(options_for(variants[v]));
      cuda::synchronize();
      const int64_t live_before = live_bytes(dev);
      reset_peak_bytes(dev);
      reset_counters();
      const auto start = std::chrono::steady_clock::now();
      if (variants[v].captured) {
        graphs[v]->replay();
        f.checksum[v] = ops::sum(replayed[v]).item();  // as the eager step ends
      } else {
        f.checksum[v] = paper::hessian_step(mlp, x, variants[v].final_backward);
      }
      const std::chrono::duration<double, std::milli> elapsed =
          std::chrono::steady_clock::now() - start;
      f.peak[v] = peak_bytes(dev) - live_before;
      if (!variants[v].captured) f.zero_products[v] = counters().products_of_zeros;
      if (r >= c.warmup) f.ms[v].push_back(elapsed.count());
    }
  }
  cuda::profiler_stop();

  const bool all_variants =
      find(variants, false, false, false) >= 0 && find(variants, true, true, false) >= 0;
  if (!all_variants) {  // a profiler's run: no table
    std::printf("ran %zu variant(s), %d steps each\n", n, c.warmup + c.reps);
    return 0;
  }
  print_table(variants, f, false);
  if (find(variants, false, false, true) >= 0) print_table(variants, f, true);
  if (!c.tsv.empty() && write_tsv(c, variants, f) != 0) return 1;
  std::printf("peak bytes above the live bytes before the step; live after setup: %lld\n",
              static_cast<long long>(live_bytes(dev)));
  std::printf("anchor (seed 001, H100 + PyTorch 2.11): 2.40 ms and 4.65 ms\n");
  // Per-call needs_input_grad only skips work, and a replay runs the captured step's kernels on
  // the same inputs: no variant may change the result.
  for (size_t v = 0; v < n; ++v) {
    const int same = find(variants, variants[v].final_backward, true, false);
    if (same >= 0 && f.checksum[v] != f.checksum[same]) {
      std::printf("MISMATCH: sum(y_xx) %.9g (%s, per-call %s%s) vs %.9g (eager, per-call on)\n",
                  f.checksum[v], step_name(variants[v].final_backward),
                  variants[v].per_call ? "on" : "off", variants[v].captured ? ", captured" : "",
                  f.checksum[same]);
      return 1;
    }
  }
  std::printf("sum(y_xx) = %.9g (the same in every variant)\n", f.checksum[1]);
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
    } else if (arg == "--no-graphs") {
      c.graphs = false;
    } else if (arg == "--cpu") {
      c.cpu = true;
    } else if (arg == "--tf32") {
      ag::cuda::set_allow_tf32(true);
    } else if (arg == "--builtin-gemm") {
      ag::cuda::set_gemm_backend(ag::cuda::GemmBackend::kBuiltin);
    } else if ((arg == "--per-call" || arg == "--final") && i + 1 < argc) {
      const std::string which = argv[++i];
      bool* pick = arg == "--per-call" ? c.per_call : c.final_backward;
      pick[0] = which != "on" && which != "yes";
      pick[1] = which != "off" && which != "no";
    } else if (arg == "--tsv" && i + 1 < argc) {
      c.tsv = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--batch N] [--reps N] [--warmup N] [--tanh] [--cpu] [--tf32] "
                   "[--builtin-gemm] [--no-graphs] [--per-call on|off] [--final yes|no] "
                   "[--tsv FILE]\n",
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
