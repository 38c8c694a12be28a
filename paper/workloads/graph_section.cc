// Seed 001's idea drawn: the autograd graph of a two-layer MLP and what grad(y, {x}) runs in it,
// with per-call needs_input_grad on and off (describe_graph_dot). Written as Graphviz DOT files
// next to the reports, rendered to SVG when Graphviz's `dot` is installed, and shown as text in
// seed 001's report.
#include <filesystem>
#include <fstream>

#include "engine/autograd.h"
#include "engine/describe_graph.h"
#include "ops/ops.h"
#include "paper/harness/environment.h"
#include "paper/workloads/hessian.h"
#include "paper/workloads/sections.h"

namespace fs = std::filesystem;

namespace ag::paper {

namespace {

// Writes `dot` to out/name.dot and, where Graphviz is installed, out/name.svg. Returns what it
// wrote, for the report.
std::string write_dot(const fs::path& out, const std::string& name, const std::string& dot) {
  const fs::path file = out / (name + ".dot");
  std::ofstream(file) << dot;
  int status = 1;
  run_command("command -v dot >/dev/null && dot -Tsvg " + shell_quote(file.string()) + " -o " +
                  shell_quote((out / (name + ".svg")).string()) + " 2>&1",
              &status);
  return status == 0 ? name + ".dot and " + name + ".svg" : name + ".dot (no Graphviz here)";
}

}  // namespace

void graph_section(const Context& context, Report& report) {
  HessianConfig config;
  config.input = 4;
  config.hidden = 8;
  config.layers = 2;
  config.batch = 3;
  const Mlp mlp = make_mlp(config);
  Tensor x = make_hessian_input(config);
  const Tensor y = mlp.forward(x);

  const EngineOptions on = current_options().with_per_call_needs_input_grad(true);
  const EngineOptions off = current_options().with_per_call_needs_input_grad(false);
  const std::string wrote_on =
      write_dot(context.out, "graph_mlp_needs_on", describe_graph_dot({y}, {x}, on));
  const std::string wrote_off =
      write_dot(context.out, "graph_mlp_needs_off", describe_graph_dot({y}, {x}, off));

  report.body << "\n## The graph of grad(y, {x}) for a two-layer MLP\n\n"
              << "What `describe_graph(y, {x})` prints for a small version of the workload ("
              << config.layers << " hidden layers of width " << config.hidden << ", batch "
              << config.batch
              << "). Nodes marked `runs` run; inside them, per-call needs_input_grad skips the "
                 "formulas of the edges marked `not computed` (the weights' and biases' "
                 "gradients). Graphviz files: "
              << wrote_on << " (needs on), " << wrote_off << " (needs off).\n\n```\n"
              << describe_graph({y}, {x}, on) << "```\n";
}

}  // namespace ag::paper
