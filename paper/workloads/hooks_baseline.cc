#include "paper/workloads/hooks_baseline.h"

#include <cmath>
#include <iostream>

#include "paper/harness/interleave.h"
#include "paper/workloads/hessian.h"
#include "paper/workloads/overhead_rounds.h"
#include "paper/workloads/timing.h"
#include "paper/workloads/tiny_graph.h"

namespace ag::paper {
namespace {

constexpr double kBelowLibtorch = 15;   // issue 45 (issue 17's): at least 15x below libtorch
constexpr double kHessianTarget = 0.8;  // issue 45: at most 0.8x PyTorch's hessian step
const char* kFinal[2] = {", no final backward", ", with final backward"};
const std::string kFirstQuartile = "ours / it per round, first quartile";
const std::string kThirdQuartile = "ours / it per round, third quartile";

std::string under(const std::string& metric, const Condition& condition) {
  return metric + " [" + condition.name + "]";
}

std::string hessian_workload(Activation a, bool fb) {
  return std::string("no_hooks_hessian_") + (a == Activation::kRelu ? "relu" : "tanh") +
         (fb ? "_final_backward" : "");
}

// Seed 001's four hessian steps, ours (every option on, as shipped) and PyTorch's autograd, all
// eight in the same interleaved rounds under each condition.
void measure_hessians(const Context& context, const HessianConfig& base, int rounds,
                      int busy_rounds, double stretch) {
  PeerProcess* torch = context.peers->torch.get();
  const std::string peer = (torch ? torch->short_name() : std::string("PyTorch")) + " autograd";
  struct Step {
    std::string workload;
    HessianConfig config;
    Mlp mlp;
    Tensor x;
    bool fb;
  };
  std::vector<Step> steps;
  for (const Activation a : {Activation::kRelu, Activation::kTanh}) {
    HessianConfig hc = base;
    hc.activation = a;
    for (const bool fb : {false, true}) {
      steps.push_back({hessian_workload(a, fb), hc, make_mlp(hc), make_hessian_input(hc), fb});
    }
  }
  for (const Condition& condition : context.conditions) {
    const Load load(condition);
    std::vector<Contender> contenders;
    for (const Step& step : steps) {
      contenders.push_back(
          {step.workload + "/ours", [&step, stretch] {
             return std::optional<double>(
                 measure_hessian_steps(step.mlp, step.x, step.fb, EngineOptions(), stretch)
                     .seconds *
                 1e3);
           }});
      const std::vector<std::string> task =
          hessian_peer_task({"hessian", "autograd"}, step.config, step.fb, stretch);
      contenders.push_back({step.workload + "/" + peer, [torch, task]() -> std::optional<double> {
                              if (!torch || !torch->available()) return std::nullopt;
                              const auto v = torch->value(task);
                              return v ? std::optional<double>(*v * 1e3) : std::nullopt;
                            }});
    }
    const Rounds measured =
        interleaved_rounds(condition.quiet() ? rounds : busy_rounds, contenders);
    const std::vector<std::optional<double>> med = measured.medians();
    std::cout << "  hessian steps, " << condition.name << ":";
    for (size_t i = 0; i < steps.size(); ++i) {
      const std::string& wl = steps[i].workload;
      const std::string metric = under("step time", condition);
      if (med[2 * i]) context.results->add(wl, "ours", metric, *med[2 * i], "ms");
      if (med[2 * i + 1]) {
        context.results->add(wl, peer, metric, *med[2 * i + 1], "ms");
        const auto [q1, q3] = measured.middle_half(2 * i, 2 * i + 1);
        context.results->add(wl, peer, under(kFirstQuartile, condition), q1, "x");
        context.results->add(wl, peer, under(kThirdQuartile, condition), q3, "x");
      }
      std::cout << " " << wl << " " << format(med[2 * i].value_or(std::nan(""))) << " / "
                << format(med[2 * i + 1].value_or(std::nan(""))) << " ms;";
    }
    std::cout << std::endl;
  }
}

}  // namespace

std::string verdict_at_most(double r, double target) {
  if (std::isnan(r)) return "n/a";
  return r <= target ? "met (" + format(r) + "x)"
                     : "missed by " + format(100 * (r / target - 1)) + "% (" + format(r) + "x)";
}

void no_hooks_rows(const Context& context, int rounds, int busy_rounds, double stretch,
                   std::ostringstream& s) {
  Results& results = *context.results;
  const Peers& peers = *context.peers;
  PeerProcess* torch = peers.torch.get();
  PeerProcess* libtorch = peers.libtorch.get();
  const int tiny_iters = context.quick ? 2000 : 20000, tiny_rounds = context.quick ? 2 : 15;
  const int chain_iters = context.quick ? 5 : 100, chain_rounds = context.quick ? 2 : 11;
  const ScalarChainInputs chain = make_scalar_chain_inputs(1000);
  // Seed 000's workloads and peer tasks, ours as shipped (pruning on) and libtorch only.
  OverheadWorkload tiny{"no_hooks_tiny_graph",
                        "us",
                        1e6,
                        [&](const EngineOptions& o) { return time_tiny_graph_us(o, tiny_iters); },
                        {"tiny_graph", std::to_string(context.quick ? 200 : tiny_iters / 2)}};
  OverheadWorkload scalar{
      "no_hooks_scalar_chain",
      "ms",
      1e3,
      [&](const EngineOptions& o) { return time_scalar_chain_ms(chain, o, chain_iters); },
      {"scalar_chain", "1000", std::to_string(context.quick ? 2 : chain_iters / 5)}};
  for (OverheadWorkload* w : {&tiny, &scalar}) {
    w->pruning_off_too = false;
    w->python_peer = false;
  }
  const std::string placement = measure_overhead(context, tiny, tiny_rounds);
  measure_overhead(context, scalar, chain_rounds);
  HessianConfig hc;
  if (context.quick) {
    hc.batch = 100;
    hc.hidden = 64;
  }
  measure_hessians(context, hc, rounds, busy_rounds, stretch);

  const std::string cpp = peer_name(libtorch, "C++");
  const std::string py = (torch ? torch->short_name() : std::string("PyTorch")) + " autograd";
  s << "### With no hooks registered: nothing may cost\n\n"
    << "Issue 45's baseline rows, measured in this run under every condition: the engine as "
       "shipped, no hook anywhere, against the peers of seed 000 and seed 001. grad(a*b) on 2x2 "
       "and the 1000-mul chain (seed 000's workloads and peer tasks, forward included) against "
    << cpp << ": median of " << tiny_rounds << " and " << chain_rounds << " interleaved rounds of "
    << tiny_iters << " and " << chain_iters
    << " calls of ours, the peer's between them; quiet rounds: " << placement
    << " (Note [One CPU for single-threaded rounds], paper/harness/affinity.h); target: at least "
    << format(kBelowLibtorch) << "x below it (ours / its <= " << format(1 / kBelowLibtorch)
    << "x). Seed 001's CPU hessian step (batch " << hc.batch << ", hidden width " << hc.hidden
    << ", its four variants) against " << py << ", at the run's thread count: median of " << rounds
    << " interleaved rounds quiet and " << busy_rounds
    << " under each load, each step timed over a stretch of at least " << stretch
    << " s; target: at most " << format(kHessianTarget)
    << "x its time. The middle half column gives the first to third quartile of ours / its, "
       "taken round by round.\n\n";
  Table t({"workload", "condition", "ours", "peer's time (ours / its)", "middle half of rounds",
           "target", "met?"});
  auto cell = [](double v, double ours, const std::string& unit, const std::string& missing) {
    return peer_cell(std::isnan(v) ? std::nullopt : std::optional<double>(v), ours, unit, missing);
  };
  for (const auto& [wl, label, unit] : {std::tuple<std::string, std::string, std::string>{
                                            "no_hooks_tiny_graph", "grad(a*b), 2x2", "us"},
                                        {"no_hooks_scalar_chain", "1000-mul chain", "ms"}}) {
    for (const Condition& condition : context.conditions) {
      const std::string metric = under("time per call", condition);
      const double ours = results.get(wl, "pruning on", metric);
      const double its = results.get(wl, cpp, metric);
      // The quartiles of its / ours; as ours / its they swap ends.
      const double q1 = results.get(wl, cpp, under(kBelowFirstQuartile, condition));
      const double q3 = results.get(wl, cpp, under(kBelowThirdQuartile, condition));
      const double r = ours / its;
      t.row({label + " vs " + cpp, condition.name, with_unit(ours, unit),
             cell(its, ours, unit, peers.missing(libtorch)),
             std::isnan(q1) ? "-" : ratio_range(1 / q3, 1 / q1),
             "<= " + format(1 / kBelowLibtorch) + "x (" + format(kBelowLibtorch) + "x below)",
             std::isnan(r)
                 ? "n/a"
                 : (r <= 1 / kBelowLibtorch ? "met (" : "missed (") + format(1 / r) + "x below)"});
    }
  }
  for (const Activation a : {Activation::kRelu, Activation::kTanh}) {
    for (const bool fb : {false, true}) {
      const std::string wl = hessian_workload(a, fb);
      for (const Condition& condition : context.conditions) {
        const double ours = results.get(wl, "ours", under("step time", condition));
        const double its = results.get(wl, py, under("step time", condition));
        t.row({std::string("hessian, ") + (a == Activation::kRelu ? "ReLU" : "Tanh") + kFinal[fb] +
                   " vs " + py,
               condition.name, with_unit(ours, "ms"), cell(its, ours, "ms", peers.missing(torch)),
               ratio_range(results.get(wl, py, under(kFirstQuartile, condition)),
                           results.get(wl, py, under(kThirdQuartile, condition))),
               "<= " + format(kHessianTarget) + "x", verdict_at_most(ours / its, kHessianTarget)});
      }
    }
  }
  s << t.str() << "\n";
}

}  // namespace ag::paper
