// Seed 002 on traced programs: the pass on the paper's workloads traced into IR (beside the
// synthetic scale curve), PyTorch's pass on the same graphs, and the hessian step run through the
// executor (its DifferentiableGraph an autograd node) vs eager.
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>

#include "paper/harness/interleave.h"
#include "paper/workloads/jit_pass.h"
#include "paper/workloads/sections.h"
#include "paper/workloads/timing.h"
#include "paper/workloads/torchscript_ir.h"
#include "paper/workloads/traced_workloads.h"

namespace ag::paper {
namespace {

constexpr size_t kMaxRebuildNodes = 2000;

struct TracedGraph {
  std::string name;
  std::unique_ptr<jit::Graph> graph;
};

// The workloads as the tracer records them. The deep MLPs (width 8) give traced graphs of the
// synthetic curve's sizes.
std::vector<TracedGraph> traced_graphs(bool quick) {
  std::vector<TracedGraph> out;
  const HessianConfig hessian;
  out.push_back({"hessian MLP forward (seed 001)",
                 trace_hessian_forward(make_mlp(hessian), make_hessian_input(hessian))});
  out.push_back({"unrolled loop step loss (seed 000)", trace_unrolled_loop_loss({})});
  for (int layers : quick ? std::vector<int>{50} : std::vector<int>{500, 5000}) {
    HessianConfig deep;
    deep.hidden = 8;
    deep.batch = 4;
    deep.layers = layers;
    out.push_back({"MLP forward, " + std::to_string(layers) + " layers",
                   trace_hessian_forward(make_mlp(deep), make_hessian_input(deep))});
  }
  return out;
}

void pass_table(const Context& context, std::ostringstream& s) {
  Results& results = *context.results;
  PeerProcess* torch = context.peers->torch.get();
  const std::string peer = torch ? torch->short_name() : "PyTorch";
  const int rounds = context.quick ? 1 : 5;
  const std::filesystem::path ir_file =
      std::filesystem::temp_directory_path() /
      ("reproduce-jit-traced-" + std::to_string(getpid()) + ".ir");
  Table t({"traced workload", "nodes", "groups", "incremental", "rebuild", peer + "'s pass",
           "incremental / " + peer});
  for (const TracedGraph& traced : traced_graphs(context.quick)) {
    const bool with_peer = torch && torch->available();
    if (with_peer) std::ofstream(ir_file) << to_torchscript_ir(*traced.graph);
    JitPassRun inc, reb;
    // Rebuild mode is quadratic (the synthetic table: over a minute at 5k nodes).
    const bool with_rebuild = traced.graph->numNodes() <= kMaxRebuildNodes;
    const std::vector<std::optional<double>> med = interleaved(
        rounds,
        {{"incremental",
          [&] {
            inc = run_jit_pass(*traced.graph, jit::AliasDbMode::kIncremental);
            return std::optional<double>(inc.seconds * 1e3);
          }},
         {"rebuild",
          [&]() -> std::optional<double> {
            if (!with_rebuild) return std::nullopt;
            reb = run_jit_pass(*traced.graph, jit::AliasDbMode::kRebuild);
            return reb.seconds * 1e3;
          }},
         {peer, [&]() -> std::optional<double> {
            const auto v = with_peer ? torch->value({"jit_pass", ir_file.string()}) : std::nullopt;
            return v ? std::optional<double>(*v * 1e3) : std::nullopt;
          }}});
    // Beside the synthetic curve, in its plot: the same workload, the variant marked traced.
    const std::string w = "create_autodiff_subgraphs";
    const std::string at = "@nodes=" + std::to_string(inc.nodes);
    results.add(w, "incremental, traced", "pass time" + at, *med[0], "ms");
    if (med[1]) results.add(w, "rebuild, traced", "pass time" + at, *med[1], "ms");
    if (med[2]) results.add(w, peer + ", traced", "pass time" + at, *med[2], "ms");
    std::cout << "  traced " << traced.name << " (" << inc.nodes << " nodes): incremental "
              << format(*med[0]) << " ms, " << peer << " "
              << (med[2] ? format(*med[2]) + " ms" : context.peers->missing(torch)) << std::endl;
    t.row({traced.name, std::to_string(inc.nodes), std::to_string(inc.groups),
           with_unit(*med[0], "ms"),
           med[1] ? with_unit(*med[1], "ms")
                  : "skipped (over " + std::to_string(kMaxRebuildNodes) + " nodes)",
           med[2] ? with_unit(*med[2], "ms") : context.peers->missing(torch),
           med[2] ? ratio(*med[0], *med[2]) : ""});
  }
  std::error_code ignored;
  std::filesystem::remove(ir_file, ignored);
  s << "\nThe pass on traced programs: each workload's forward recorded by engine/jit's tracer "
       "from the ordinary engine code that the other sections run (weights and inputs as graph "
       "inputs), the same graph written as TorchScript IR for "
    << peer << "'s pass (nll_loss's targets become a tensor input); medians of " << rounds
    << " interleaved rounds.\n\n"
    << t.str() << "\n";
}

void executor_table(const Context& context, std::ostringstream& s) {
  HessianConfig c;
  if (context.quick) c.batch = 100;
  const int rounds = context.quick ? 2 : 7;
  const Mlp mlp = make_mlp(c);
  const Tensor x = make_hessian_input(c);
  const CompiledHessian compiled(mlp, x);
  double eager_sum = 0, compiled_sum = 0;
  const std::vector<std::optional<double>> med =
      interleaved(rounds, {{"eager",
                            [&] {
                              const auto start = Clock::now();
                              eager_sum = hessian_step(mlp, x, true);
                              return std::optional<double>(seconds_since(start) * 1e3);
                            }},
                           {"executor", [&] {
                              const auto start = Clock::now();
                              compiled_sum = compiled.step(true);
                              return std::optional<double>(seconds_since(start) * 1e3);
                            }}});
  const std::string w = "traced hessian step";
  context.results->add(w, "eager", "step time", *med[0], "ms");
  context.results->add(w, "executor", "step time", *med[1], "ms");
  const bool same = eager_sum == compiled_sum;
  std::cout << "  traced hessian step: eager " << format(*med[0]) << " ms, executor "
            << format(*med[1]) << " ms, same y_xx: " << (same ? "yes" : "NO") << std::endl;
  Table t({"workload", "eager", "through the executor", "executor / eager", "same y_xx bits"});
  t.row({"traced hessian step (batch " + std::to_string(c.batch) + ", " + std::to_string(c.layers) +
             " hidden layers of " + std::to_string(c.hidden) + ", final backward)",
         with_unit(*med[0], "ms"), with_unit(*med[1], "ms"), ratio(*med[1], *med[0]),
         same ? "yes" : "no"});
  s << "A training step of seed 001's hessian workload (y = mlp(x), two nested grad with "
       "create_graph, then backward into the weights), with the forward run eagerly or as the "
       "traced graph after the pass through the executor: one DifferentiableGraph whose "
       "autograd node's backward is its gradient graph, derived from the same derivative specs; "
       "median of "
    << rounds << " interleaved rounds.\n\n"
    << t.str() << "\n";
}

}  // namespace

void jit_traced_tables(const Context& context, Report& report) {
  pass_table(context, report.body);
  executor_table(context, report.body);
}

}  // namespace ag::paper
