// Seed 001's hessian step (PR 82544): per-call needs_input_grad off and on, ReLU and Tanh, without
// and with the final backward, eager and compiled (jit::CompiledFunction); PyTorch (autograd and
// torch.func) and JAX beside ours under each measuring condition; the layer's products timed
// alone; the saved CUDA rows.
#include <cmath>
#include <fstream>
#include <iostream>

#include "ops/cpu/parallel.h"
#include "paper/harness/environment.h"
#include "paper/harness/interleave.h"
#include "paper/harness/published.h"
#include "paper/workloads/hessian.h"
#include "paper/workloads/sections.h"
#include "paper/workloads/traced_workloads.h"

namespace ag::paper {
namespace {

const char* kFinal[2] = {", no final backward", ", with final backward"};
const char* kOneThread = "step time at one thread each";
// The middle half of ours / PyTorch's autograd over the rounds of one condition (Rounds::
// middle_half): the metrics of its two ends.
const std::string kFirstQuartile = "ours / it per round, first quartile";
const std::string kThirdQuartile = "ours / it per round, third quartile";

// The engine counters of a step that the work table shows: its row label, the metric written to
// figures.tsv (the variant's row there), the unit, and the field of the step's stats.
struct WorkCounter {
  const char* label;
  const char* metric;
  const char* unit;
  int64_t HessianStepStats::*value;
};
constexpr WorkCounter kWorkCounters[] = {
    {"weight-gradient matmuls", "weight-gradient matmuls", "matmuls",
     &HessianStepStats::weight_grad_matmuls},
    {"derivative formulas evaluated", "derivative formulas", "formulas",
     &HessianStepStats::formulas_evaluated},
    {"products written as zeros", "products written as zeros", "products",
     &HessianStepStats::products_of_zeros},
    {"formulas run as one fused kernel", "formulas run as one fused kernel", "formulas",
     &HessianStepStats::fused_formulas},
    {"gradient sums fused into a formula's kernel", "gradient sums fused into formulas", "sums",
     &HessianStepStats::fused_sums},
};

// Ours compiled: the whole step as one jit::CompiledFunction (JitHessianStep), the counterpart
// of JAX's jit.
const char* kCompiled = "ours, compiled";

// One peer implementation of the step: its process, the task's leading fields, whether it also
// runs under the busy conditions (the slow ones run quiet only, in fewer rounds), and whether it
// is compared with ours compiled (JAX's jit) rather than with ours eager.
struct PeerImpl {
  PeerProcess* process;
  std::string name;               // the column: "PyTorch 2.15.0 autograd"
  std::vector<std::string> task;  // {"hessian", "autograd"}, {"hessian", "hessian", "1"}, ...
  bool busy_too;
  bool slow;
  bool compiled = false;
};

std::vector<PeerImpl> peer_impls(const Peers& peers) {
  std::vector<PeerImpl> impls;
  PeerProcess* torch = peers.torch.get();
  PeerProcess* jax = peers.jax.get();
  const std::string t = torch ? torch->short_name() : "PyTorch";
  const std::string j = jax ? jax->short_name() : "JAX";
  impls.push_back({torch, t + " autograd", {"hessian", "autograd"}, true, false});
  impls.push_back({torch, t + " torch.func.hessian", {"hessian", "func_hessian"}, true, true});
  impls.push_back({torch, t + " torch.func jvp(grad)", {"hessian", "func_hvp"}, false, false});
  impls.push_back({jax, j + " jax.hessian, jit", {"hessian", "hessian", "1"}, true, false, true});
  impls.push_back({jax, j + " jax.hessian, no jit", {"hessian", "hessian", "0"}, false, true});
  impls.push_back({jax, j + " jvp(grad), jit", {"hessian", "hvp", "1"}, false, false, true});
  return impls;
}

// The saved CUDA rows (paper/results/cuda/*.tsv: date, device, workload, variant, metric, value,
// unit), measured on a GPU machine by paper/hessian_bench and the CUDA peer.
void append_cuda_rows(const std::filesystem::path& saved_results, std::ostringstream& s) {
  s << "### CUDA\n\n";
  std::vector<std::vector<std::string>> rows;
  std::error_code ec;
  const std::filesystem::path dir = saved_results / "cuda";
  if (std::filesystem::is_directory(dir, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.path().extension() != ".tsv") continue;
      std::ifstream in(entry.path());
      std::string line;
      while (std::getline(in, line)) {
        const std::vector<std::string> cols = split_tabs(line);
        if (cols.size() == 7 && cols[0] != "date" && cols[2].rfind("hessian", 0) == 0)
          rows.push_back(cols);
      }
    }
  }
  if (rows.empty()) {
    s << "No saved CUDA results (paper/results/cuda/*.tsv): this machine has no GPU; the rows "
         "appear here once a GPU run has saved them.\n";
    return;
  }
  Table cu({"date", "device", "workload", "variant", "metric", "value"});
  for (const auto& r : rows) cu.row({r[0], r[1], r[2], r[3], r[4], r[5] + " " + r[6]});
  s << "Saved from earlier runs on a GPU machine (not measured now):\n\n" << cu.str();
}

// `metric` as measured under `condition`: "step time, no final backward [busy: spin]".
std::string under(const std::string& metric, const Condition& condition) {
  return metric + " [" + condition.name + "]";
}

// A peer's hessian step as a contender, in milliseconds per step over a stretch of at least
// `stretch` seconds (Note [A stretch of steps]): the task's leading fields, then the step's
// activation, final backward, batch and width, the stretch, then `extra` (a thread count); it
// takes part in the first `rounds` rounds only (0: all).
Contender peer_step(const PeerImpl& impl, const HessianConfig& hc, bool fb, double stretch,
                    std::initializer_list<std::string> extra = {}, int rounds = 0) {
  std::vector<std::string> task = hessian_peer_task(impl.task, hc, fb, stretch);
  task.insert(task.end(), extra);
  return {impl.name,
          [&impl, task]() -> std::optional<double> {
            const auto v = impl.process->value(task);
            return v ? std::optional<double>(*v * 1e3) : std::nullopt;
          },
          rounds};
}

// Ours and PyTorch's autograd at one thread each, quiet, interleaved: one core's work, which is
// what the busy conditions leave each engine (see the table's text).
void one_thread_each(const Context& context, const PeerImpl& autograd, const HessianConfig& hc,
                     const Mlp& mlp, const Tensor& x, bool fb, const std::string& wl, int rounds,
                     double stretch) {
  std::vector<Contender> contenders = {
      {"ours", [&] {
         double ms = 0;
         ops::run_with_threads(1, [&] {
           ms = measure_hessian_steps(mlp, x, fb, EngineOptions(), stretch).seconds * 1e3;
         });
         return std::optional<double>(ms);
       }}};
  if (autograd.process && autograd.process->available()) {
    contenders.push_back(peer_step(autograd, hc, fb, stretch, {"1"}));
  }
  const std::vector<std::optional<double>> med = interleaved(rounds, contenders);
  const std::string metric = std::string(kOneThread) + kFinal[fb];
  std::cout << "  " << activation_name(hc.activation) << kFinal[fb] << ", one thread each:";
  for (size_t c = 0; c < contenders.size(); ++c) {
    if (!med[c]) continue;
    context.results->add(wl, contenders[c].name, metric, *med[c], "ms");
    std::cout << " " << contenders[c].name << " " << format(*med[c]) << " ms;";
  }
  std::cout << std::endl;
}

}  // namespace

void hessian_section(const Context& context, Report& report) {
  progress(3,
           "hessian (seed 001): per-call needs_input_grad off / on, ReLU and Tanh, without "
           "and with the final backward, and the peers");
  Results& results = *context.results;
  const Peers& peers = *context.peers;
  HessianConfig hc;
  if (context.quick) {
    hc.batch = 100;
    hc.hidden = 64;
  }
  const int rounds = context.quick ? 2 : 15, busy_rounds = context.quick ? 2 : 15;
  const int slow_rounds = context.quick ? 1 : 5, slow_busy_rounds = context.quick ? 1 : 3;
  const double stretch = context.quick ? 0 : kStretchSeconds;  // Note [A stretch of steps]
  const Tensor x = make_hessian_input(hc);
  // Seed 001's pair, per-call needs off and on, multiplies every product as PyTorch's kernels do;
  // "ours" is the engine as shipped, every option on (Note [Products with a zero operand]).
  struct Variant {
    const char* name;
    EngineOptions options;
  };
  const Variant variants[3] = {
      {"per-call off",
       EngineOptions().with_per_call_needs_input_grad(false).with_skip_zero_products(false)},
      {"per-call on", EngineOptions().with_skip_zero_products(false)},
      {"ours", EngineOptions()}};
  const Activation activations[2] = {Activation::kRelu, Activation::kTanh};
  const std::vector<PeerImpl> impls = peer_impls(peers);
  for (const Activation activation : activations) {
    hc.activation = activation;
    const Mlp mlp = make_mlp(hc);
    const std::string wl =
        std::string("hessian_") + (activation == Activation::kRelu ? "relu" : "tanh");
    for (int fb = 0; fb < 2; ++fb) {
      // Traced and folded once (not timed), then called in every round.
      const auto compile_start = Clock::now();
      const JitHessianStep compiled(mlp, x, fb);
      results.add(wl, kCompiled, std::string("compile time") + kFinal[fb],
                  seconds_since(compile_start) * 1e3, "ms");
      results.add(wl, kCompiled, std::string("ops traced") + kFinal[fb],
                  static_cast<double>(compiled.function().traced_nodes()), "ops");
      results.add(wl, kCompiled, std::string("values folded to zeros") + kFinal[fb],
                  static_cast<double>(compiled.function().zeros_folded()), "values");
      results.add(wl, kCompiled, std::string("repeated ops merged") + kFinal[fb],
                  static_cast<double>(compiled.function().subexpressions_merged()), "ops");
      results.add(wl, kCompiled, std::string("ops run per call") + kFinal[fb],
                  static_cast<double>(compiled.function().graph().numNodes()), "ops");
      for (const Condition& condition : context.conditions) {
        const Load load(condition);
        std::vector<HessianStepStats> last(3);
        std::vector<double> cores;  // ours: the CPU time of our threads over the step time
        std::vector<Contender> contenders;
        for (int v = 0; v < 3; ++v) {
          if (!condition.quiet() && v < 2) continue;
          contenders.push_back({variants[v].name, [&, v] {
                                  last[v] = measure_hessian_steps(mlp, x, fb, variants[v].options,
                                                                  stretch);
                                  if (v == 2)
                                    cores.push_back(last[v].cpu_seconds / last[v].seconds);
                                  return std::optional<double>(last[v].seconds * 1e3);
                                }});
        }
        contenders.push_back(
            {kCompiled, [&] {
               return std::optional<double>(
                   seconds_per_call_over(stretch, [&] { return compiled.step(); }) * 1e3);
             }});
        for (const PeerImpl& impl : impls) {
          if (!impl.process || !impl.process->available()) continue;
          if (!condition.quiet() && !impl.busy_too) continue;
          contenders.push_back(
              peer_step(impl, hc, fb, stretch, {},
                        impl.slow ? (condition.quiet() ? slow_rounds : slow_busy_rounds) : 0));
        }
        const Rounds measured =
            interleaved_rounds(condition.quiet() ? rounds : busy_rounds, contenders);
        const std::vector<std::optional<double>> med = measured.medians();
        const std::string metric = std::string("step time") + kFinal[fb];
        // Ours over PyTorch's autograd, round by round (both are in every round).
        const std::optional<size_t> ours_at = position(contenders, variants[2].name);
        const std::optional<size_t> torch_at = position(contenders, impls[0].name);
        if (ours_at && torch_at) {
          const auto [q1, q3] = measured.middle_half(*ours_at, *torch_at);
          results.add(wl, impls[0].name, under(kFirstQuartile + kFinal[fb], condition), q1, "x");
          results.add(wl, impls[0].name, under(kThirdQuartile + kFinal[fb], condition), q3, "x");
        }
        std::cout << "  " << activation_name(activation) << kFinal[fb] << ", " << condition.name
                  << ":";
        for (size_t c = 0; c < contenders.size(); ++c) {
          if (!med[c]) continue;
          results.add(wl, contenders[c].name, under(metric, condition), *med[c], "ms");
          if (condition.quiet()) results.add(wl, contenders[c].name, metric, *med[c], "ms");
          std::cout << " " << contenders[c].name << " " << format(*med[c]) << " ms;";
        }
        std::cout << std::endl;
        cores.erase(cores.begin());  // interleaved()'s warm-up repetition
        results.add(wl, "ours", under(std::string("cores used") + kFinal[fb], condition),
                    median(cores), "cores");
        if (!condition.quiet()) continue;
        for (int v = 0; v < 3; ++v) {
          for (const WorkCounter& counter : kWorkCounters) {
            results.add(wl, variants[v].name, std::string(counter.metric) + kFinal[fb],
                        static_cast<double>(last[v].*counter.value), counter.unit);
          }
        }
        results.add(wl, "off / on", std::string("speed-up") + kFinal[fb], *med[0] / *med[1], "x");
      }
      one_thread_each(context, impls[0], hc, mlp, x, fb, wl, rounds, stretch);
    }
  }

  // Why the ratio lands where it does: the layer's product shapes timed alone.
  const LayerProductTimes products = measure_layer_products(hc, context.quick ? 2 : 31);
  results.add("hessian_products", "forward h @ W^T", "time", products.forward * 1e3, "ms");
  results.add("hessian_products", "input gradient g @ W", "time", products.input_grad * 1e3, "ms");
  results.add("hessian_products", "weight gradient g^T @ h", "time", products.weight_grad * 1e3,
              "ms");
  results.add("hessian_products", "products only", "off / on bound", products.products_only_bound(),
              "x");

  const Published& before = published("seed001/relu/before");
  const Published& history = published("history/hessian/relu");
  std::ostringstream& s = report.body;
  s << "Published: " << before.source << "'s hessian benchmark on " << before.hardware
    << ". Ours: CPU, float32, batch " << hc.batch << ", hidden width " << hc.hidden
    << ", at the peers' thread count; median of " << rounds << " interleaved rounds quiet and "
    << busy_rounds
    << " under each load (forward included), each round also timing every peer (the slow "
       "ones, torch.func.hessian and JAX without jit, in the first "
    << slow_rounds << " and " << slow_busy_rounds
    << "). In a round each contender runs steps back to back for at least " << stretch
    << " s (one step where a step takes longer) and counts the mean per step: a single step is "
       "shorter than the busy loads' rhythm, and timed alone it measures where it lands in that "
       "rhythm more than what a loop of steps gets done (Note [A stretch of steps] in "
       "paper/workloads/timing.h).\n\n"
    << peers.describe() << "\n";
  s << "MLP: input 16, 6 hidden Linear+activation layers, output 1; y_x = grad(y, x, "
       "create_graph), y_xx = grad(y_x, x, create_graph), optionally y_xx.sum().backward() to the "
       "weights.\n\n"
       "**ReLU** (the published workload): as in PyTorch, relu's derivative is threshold_backward, "
       "differentiable with a zero derivative w.r.t. relu's output, so y_xx is zero but computed "
       "through the graph (matmuls included) and the final backward reaches the weights: both "
       "engines build the same graph and evaluate the same formulas. Some of those products have "
       "an operand that is all zeros (relu's zero derivative, pushed through the layers). "
       "PyTorch's kernels multiply them; ours, as shipped, write such a product as zeros when the "
       "other operand is finite, which gives the bits the product would (Note [Products with a "
       "zero operand], ops/cpu/zero_operand.h; counted below). The per-call off and on columns "
       "run with that switched off, so that seed 001's pair multiplies every product, as "
       "PyTorch does; the ours column is the engine as shipped. **Tanh** is the same MLP with a "
       "smooth activation, whose second-order terms are not zero: none of its products "
       "has a zero operand.\n\n";
  const std::string torch_autograd = impls[0].name;
  Table t({"workload", "per-call off", "per-call on", "off / on", "ours", torch_autograd + " here",
           "PyTorch 1.13.1 OpenBLAS, 1 thread (history)", "published before (A100)",
           "published after (A100)", "published off / on", "published functorch v0.1.1 (A100)"});
  const char* names[2] = {"ReLU", "Tanh"};
  for (int a = 0; a < 2; ++a) {
    const std::string wl = a ? "hessian_tanh" : "hessian_relu";
    for (int fb = 0; fb < 2; ++fb) {
      const std::string metric = std::string("step time") + kFinal[fb];
      const double off_ms = results.get(wl, "per-call off", metric);
      const double on_ms = results.get(wl, "per-call on", metric);
      const double ours_ms = results.get(wl, "ours", metric);
      const double peer = results.get(wl, torch_autograd, metric);
      const std::string key = std::string("seed001/relu") + (fb ? "/final_backward" : "");
      auto pub = [&](const std::string& what) { return a ? "" : published(key + "/" + what).text; };
      t.row(
          {std::string(names[a]) + kFinal[fb], with_unit(off_ms, "ms"), with_unit(on_ms, "ms"),
           ratio(off_ms, on_ms), with_unit(ours_ms, "ms"),
           std::isnan(peer) ? peers.missing(impls[0].process) : with_unit(peer, "ms"),
           a ? ""
             : published(fb ? "history/hessian/relu/final_backward" : "history/hessian/relu").text,
           pub("before"), pub("after"), pub("speedup"), pub("functorch")});
    }
  }
  s << t.str() << "\n";
  s << "The history column is " << history.source << ", measured on " << history.hardware
    << ": the peer of earlier versions of this table.\n\n";

  s << "#### Ours against the peers, quiet and busy\n\n"
    << "Ours = the engine as shipped (the ours column above). A peer's cell is its median step and "
       "ours / its (below 1: ours is "
       "faster), both from the same interleaved rounds under the same condition, at the same "
       "thread count. The ratio of two medians hides how far it moves from round to round on a "
       "busy machine: the column after PyTorch's autograd gives the middle half (first to third "
       "quartile) of ours / its taken round by round. torch.func.hessian and jax.hessian compute "
       "each sample's full 16x16 Hessian "
       "(vmap over the batch; rows summed to y_xx), 16 tangents where the nested grads and "
       "jvp(grad) push one (H @ 1 = y_xx). JAX's jit columns are compared with ours compiled, "
       "the like of jit: the whole step traced once with its gradients into one graph "
       "(jit::CompiledFunction, Note [Compiled functions] in engine/jit/compile.h), then run "
       "with no autograd; with the final backward it returns the weights' and biases' gradients "
       "of sum(y_xx), as JAX's value_and_grad does. Both know that ReLU's second derivative is "
       "zero by construction (JAX's symbolic zeros; ours, Note [Structural zeros] in "
       "engine/jit/fold_zeros.h) and drop every op that only feeds zeros, the forward included, "
       "so in the ReLU rows they write the zeros of the result and little else (see the table "
       "after this one); in the Tanh rows they run the whole step. Busy conditions run the peers "
       "in the first columns only.\n\n";
  std::vector<std::string> header = {"workload", "condition", "ours", kCompiled};
  for (const PeerImpl& impl : impls) {
    header.push_back(impl.compiled ? impl.name + " (ratio: ours, compiled / it)" : impl.name);
    if (&impl == &impls[0]) header.push_back("ours / " + impl.name + ", middle half of rounds");
  }
  Table p(header);
  for (int a = 0; a < 2; ++a) {
    const std::string wl = a ? "hessian_tanh" : "hessian_relu";
    for (int fb = 0; fb < 2; ++fb) {
      for (const Condition& condition : context.conditions) {
        const std::string metric = under(std::string("step time") + kFinal[fb], condition);
        const double ours = results.get(wl, "ours", metric);
        const double ours_compiled = results.get(wl, kCompiled, metric);
        std::vector<std::string> r = {std::string(names[a]) + kFinal[fb], condition.name,
                                      with_unit(ours, "ms"), with_unit(ours_compiled, "ms")};
        for (const PeerImpl& impl : impls) {
          const double v = results.get(wl, impl.name, metric);
          r.push_back(!condition.quiet() && !impl.busy_too
                          ? "-"
                          : peer_cell(std::isnan(v) ? std::nullopt : std::optional<double>(v),
                                      impl.compiled ? ours_compiled : ours, "ms",
                                      peers.missing(impl.process)));
          if (&impl != &impls[0]) continue;
          const double q1 =
              results.get(wl, impl.name, under(kFirstQuartile + kFinal[fb], condition));
          const double q3 =
              results.get(wl, impl.name, under(kThirdQuartile + kFinal[fb], condition));
          r.push_back(std::isnan(q1) ? "-" : ratio_range(q1, q3));
        }
        p.row(r);
      }
    }
  }
  s << p.str() << "\n";
  for (const Condition& condition : context.conditions) {
    if (!condition.quiet()) s << "- " << condition.name << ": " << condition.description << "\n";
  }
  if (context.conditions.size() > 1) s << "\n";

  s << "The compiled step (jit::CompiledFunction), traced and folded once before the rounds: ops "
       "the trace recorded (the forward, the nested grads' formulas and, with the final backward, "
       "its formulas), values found zero by construction, ops that repeat an earlier op's "
       "computation (merged into it: Note [Common subexpressions] in "
       "engine/jit/common_subexpressions.h), and the ops left to run per call.\n\n";
  Table cs({"workload", "ops traced", "values folded to zeros", "repeated ops merged",
            "ops run per call", "compile time (once)"});
  for (int a = 0; a < 2; ++a) {
    const std::string wl = a ? "hessian_tanh" : "hessian_relu";
    for (int fb = 0; fb < 2; ++fb) {
      auto get = [&](const char* metric) {
        return results.get(wl, kCompiled, std::string(metric) + kFinal[fb]);
      };
      cs.row({std::string(names[a]) + kFinal[fb], format(get("ops traced")),
              format(get("values folded to zeros")), format(get("repeated ops merged")),
              format(get("ops run per call")), with_unit(get("compile time"), "ms")});
    }
  }
  s << cs.str() << "\n";

  s << "#### One core each: what a busy neighbour leaves\n\n"
    << "Cores ours got: the CPU time of all our threads during the step over the step's time "
       "(median over the rounds above; "
    << ops::parallel_threads()
    << " would be all our threads running throughout). Where a neighbour keeps a thread busy, this "
       "shows how much of the machine the scheduler left our step; at about "
       "one core, the busy rows compare what each engine does with one core, which the last "
       "columns measure directly: both engines at one thread each, quiet, in interleaved rounds "
       "(median of "
    << rounds << ").\n\n";
  std::vector<std::string> one_core_header = {"workload"};
  for (const Condition& condition : context.conditions)
    one_core_header.push_back("cores ours got, " + condition.name);
  one_core_header.insert(one_core_header.end(), {"ours, 1 thread", torch_autograd + ", 1 thread"});
  Table oc(one_core_header);
  for (int a = 0; a < 2; ++a) {
    const std::string wl = a ? "hessian_tanh" : "hessian_relu";
    for (int fb = 0; fb < 2; ++fb) {
      std::vector<std::string> r = {std::string(names[a]) + kFinal[fb]};
      for (const Condition& condition : context.conditions) {
        r.push_back(format(
            results.get(wl, "ours", under(std::string("cores used") + kFinal[fb], condition))));
      }
      const std::string metric = std::string(kOneThread) + kFinal[fb];
      const double ours = results.get(wl, "ours", metric);
      const double peer = results.get(wl, torch_autograd, metric);
      r.push_back(with_unit(ours, "ms"));
      r.push_back(peer_cell(std::isnan(peer) ? std::nullopt : std::optional<double>(peer), ours,
                            "ms", peers.missing(impls[0].process)));
      oc.row(r);
    }
  }
  s << oc.str() << "\n";

  Table c({"work per step (engine counters)", "per-call off", "per-call on", "ours"});
  for (int a = 0; a < 2; ++a) {
    const std::string wl = a ? "hessian_tanh" : "hessian_relu";
    for (int fb = 0; fb < 2; ++fb) {
      const std::string label = std::string(names[a]) + kFinal[fb];
      for (const WorkCounter& counter : kWorkCounters) {
        std::vector<std::string> row = {counter.label + (", " + label)};
        for (const Variant& variant : variants)
          row.push_back(
              format(results.get(wl, variant.name, std::string(counter.metric) + kFinal[fb])));
        c.row(row);
      }
    }
  }
  s << c.str() << "\n";
  s << "Formulas run as one fused kernel: tanh_backward's derivative w.r.t. its result, "
       "grad * (-2 * result * grad_output), one pass over memory instead of three kernels; "
       "under create_graph (the second grad) it records one scaled_product node where "
       "PyTorch's graph records three, and the final backward runs that node's three formulas "
       "as fused kernels again, where PyTorch's graph runs five kernels (Note [Fused formula "
       "kernels], ops/fused.cc). Two other changes leave these counts alone: large "
       "products pack their shared operand once for all threads (Note [Shared packing], "
       "ops/cpu/kernels.cc), and without create_graph gradients that meet are summed in "
       "place, as PyTorch's InputBuffer does (Note [Summing gradients in place], "
       "engine/engine.cc). Gradient sums fused into a formula's kernel: in the final backward, a "
       "tanh_backward or scaled_product formula whose gradient meets one already waiting adds "
       "its values into it in the same pass, instead of writing a new tensor for the sum to read "
       "back (Note [Sums fused into formulas], engine/engine.cc).\n\n";
  s << "Where the ReLU ratio comes from: per hidden layer the step runs 4 products of the kinds "
       "below with per-call needs on, and 3 weight gradients more with it off (the first grad's, "
       "and the second grad's two). Timed alone (median of interleaved runs), they bound the "
       "off/on ratio at (4 kept + 3 weight) / (4 kept) when products are all the step does; the "
       "rest of the step (relu masks, fills, the thread pool) is the same in both variants and "
       "pulls the measured ratio below that bound.\n\n";
  Table pr(
      {"product (batch " + std::to_string(hc.batch) + ", width " + std::to_string(hc.hidden) + ")",
       "time"});
  pr.row({"forward h @ W^T (both variants)", with_unit(products.forward * 1e3, "ms")});
  pr.row({"input gradient g @ W (both variants)", with_unit(products.input_grad * 1e3, "ms")});
  pr.row(
      {"weight gradient g^T @ h (per-call off only)", with_unit(products.weight_grad * 1e3, "ms")});
  pr.row({"off / on bound from products alone", format(products.products_only_bound()) + "x"});
  s << pr.str() << "\n";
  append_cuda_rows(context.saved_results, s);
}

}  // namespace ag::paper
