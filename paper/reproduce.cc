// `bazel run -c opt //paper:reproduce [-- --quick] [--busy all|bursty,compile,spin] [--out DIR]
// [--peers | --no-peers] [--no-callgrind] [--no-plots] [--only 000|001|002|003|044|045|046]`
//
// Runs every workload of the paper with each optimization off and on, and the peers (PyTorch
// from Python and from C++, torch.func, JAX; paper/peers/README.md) in the same invocation, every
// repetition of a peer interleaved with ours and at our thread count; with --busy, again under
// each competing load (paper/load_generator). Writes
//   DIR/figures.tsv        one row per measured figure (ours and the peers')
//   DIR/seed_NNN_*.md      one Markdown report per seed: ours beside the published figures and the
//                          peers on this machine
//   DIR/issue_044_views.md issue 44's views in loops (an RNN over time slices, joins of 1,000
//                          slices) beside PyTorch
//   DIR/issue_045_hooks.md issue 45's hooks, saved-tensor hooks and activation checkpointing
//                          beside PyTorch
//   DIR/issue_046_forward.md issue 46's forward mode (forward-over-reverse y_xx, jvp, jacfwd,
//                          jacrev) beside PyTorch's forward_ad and torch.func
//   DIR/*.png              curves (via paper/plot.py, run with /usr/bin/python3 + matplotlib)
// DIR defaults to paper/results in the source tree (under `bazel run`), else ./paper/results.
// Ratios are always between figures of this one run. --quick runs a small version of everything
// without peers (CI's smoke test; --peers adds them); its figures are not the paper's.
//
// Each workload's measuring and table live in paper/workloads/*_section.cc; the published figures
// in paper/harness/published.cc; the table writer in paper/harness/markdown.h.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "ops/cpu/parallel.h"
#include "paper/harness/environment.h"
#include "paper/harness/markdown.h"
#include "paper/harness/peers.h"
#include "paper/harness/results.h"
#include "paper/workloads/sections.h"

namespace fs = std::filesystem;

namespace ag::paper {

void progress(int index, const std::string& what) {
  std::cout << "[reproduce " << index << "/" << kSteps << "] " << what << std::endl;
}

namespace {

struct Options {
  bool quick = false;
  std::string arguments;  // as given, for the reports' command line
  bool peers = true;
  bool peers_in_quick = false;  // --peers: run them in a --quick run too
  bool callgrind = true;
  bool plots = true;
  std::string busy;  // --busy: "" (quiet only), "all", or a comma-separated list of loads
  std::string only;  // run just this seed's workloads ("000" ... "003"), or "044", "045", "046"
  fs::path out;
};

bool same_path(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec);
}

void draw_plots(const fs::path& out) {
  const fs::path script = locate("paper/plot.py");
  int status = 1;
  const std::string output =
      script.empty()
          ? "paper/plot.py not found"
          // matplotlib wants a writable config folder; a bazel test's HOME has none.
          : run_command("MPLCONFIGDIR=" +
                            shell_quote((fs::temp_directory_path() / "reproduce-mpl").string()) +
                            " /usr/bin/python3 " + shell_quote(script.string()) + " " +
                            shell_quote((out / "figures.tsv").string()) + " " +
                            shell_quote(out.string()) + " 2>&1",
                        &status);
  std::cout << "plots: " << (status == 0 ? output : "skipped: " + output) << std::endl;
}

int reproduce(const Options& options) {
  Context context;
  context.quick = options.quick;
  context.callgrind = options.callgrind;
  context.plots = options.plots;
  context.threads = ops::parallel_threads();
  context.conditions = measuring_conditions(options.busy, context.threads);
  RunInfo info;
  info.quick = options.quick;
  info.arguments = options.arguments;
  info.device = cpu_device();
  info.threads = std::to_string(context.threads) + " (ours, and every peer's)";
  info.conditions = "quiet";
  for (size_t i = 1; i < context.conditions.size(); ++i) {
    info.conditions += (i == 1 ? ", then " : ", ") + context.conditions[i].name + " (" +
                       context.conditions[i].description + ")";
  }
  std::cout << "reproduce: " << (options.quick ? "quick run" : "full run")
            << "; machine: " << info.device << "; build: " << build_mode()
            << "; threads: " << context.threads << "; conditions: " << info.conditions
            << "; writing to " << options.out << std::endl;
  fs::create_directories(options.out);
  context.out = options.out;
  context.saved_results = options.out;
  if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
    context.saved_results = fs::path(ws) / "paper" / "results";
  }
  Peers peers = start_peers(
      context.threads, !options.peers ? "skipped (--no-peers)"
                       : options.quick && !options.peers_in_quick
                           ? "skipped in --quick runs (CI's smoke test); a full run measures them"
                           : "");
  Results results(info.device);
  context.peers = &peers;
  context.results = &results;

  auto wanted = [&](const char* seed) { return options.only.empty() || options.only == seed; };
  // By seed, then issues 44, 45 and 46; one the run skips stays empty.
  std::vector<Report> reports(7);
  reports[0].file = "seed_000_topological_nr.md";
  reports[0].title = "Seed 000: topological number and discovery pruning (PR 52180, issue 12635)";
  reports[1].file = "seed_001_needs_input_grad.md";
  reports[1].title = "Seed 001: per-call needs_input_grad (issue 56500, PR 82544)";
  reports[2].file = "seed_002_alias_db.md";
  reports[2].title = "Seed 002: AliasDb updated in place by create_autodiff_subgraphs (PR 42141)";
  reports[3].file = "seed_003_guarded_saves.md";
  reports[3].title = "Seed 003: guarded saved inputs (PR 16583, issue 16577)";
  reports[4].file = "issue_044_views.md";
  reports[4].title =
      "Issue 44: views in loops (an RNN over time slices; cat, stack, split of 1,000 slices)";
  reports[5].file = "issue_045_hooks.md";
  reports[5].title = "Issue 45: hooks, saved-tensor hooks and activation checkpointing";
  reports[6].file = "issue_046_forward.md";
  reports[6].title = "Issue 46: forward mode (forward-over-reverse y_xx, jvp, jacfwd, jacrev)";
  if (wanted("000")) {
    reports[0].body << peers.describe() << "\n";
    unrolled_loop_section(context, reports[0]);
    overhead_section(context, reports[0]);
  }
  if (wanted("001")) {
    hessian_section(context, reports[1]);
    graph_section(context, reports[1]);
  }
  if (wanted("003")) {
    memory_section(context, reports[3]);
  }
  if (wanted("002")) {
    jit_pass_section(context, reports[2]);
  }
  if (wanted("044")) {
    views_section(context, reports[4]);
  }
  if (wanted("045")) {
    hooks_section(context, reports[5]);
  }
  if (wanted("046")) {
    forward_section(context, reports[6]);
  }

  progress(kSteps, "writing results");
  results.write_tsv(options.out / "figures.tsv", /*keep_other_workloads=*/!options.only.empty());
  // A run into the source tree (full or --only) also refreshes the generated section of
  // paper/paper.md from the results files there.
  const fs::path paper_md = context.saved_results.parent_path() / "paper.md";
  const bool into_tree =
      !options.quick && same_path(options.out, context.saved_results) && fs::exists(paper_md);
  write_reports(reports, info, options.out, into_tree ? &paper_md : nullptr);
  if (options.plots) draw_plots(options.out);
  const auto tables = std::count_if(reports.begin(), reports.end(),
                                    [](const Report& r) { return !r.body.str().empty(); });
  std::cout << "reproduce: wrote " << results.size() << " figures and " << tables << " tables to "
            << options.out << std::endl;
  return 0;
}

}  // namespace
}  // namespace ag::paper

int main(int argc, char** argv) {
  ag::paper::set_program_path(argv[0]);
  ag::paper::Options options;
  for (int i = 1; i < argc; ++i) {
    options.arguments += (i > 1 ? " " : "") + std::string(argv[i]);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--no-peers") {
      options.peers = false;
    } else if (arg == "--peers") {
      options.peers_in_quick = true;
    } else if (arg == "--no-callgrind") {
      options.callgrind = false;
    } else if (arg == "--no-plots") {
      options.plots = false;
    } else if (arg == "--busy") {
      options.busy = i + 1 < argc && argv[i + 1][0] != '-' ? argv[++i] : "all";
    } else if (arg == "--only" && i + 1 < argc) {
      options.only = argv[++i];
    } else if (arg == "--out" && i + 1 < argc) {
      options.out = argv[++i];
    } else {
      std::cerr << "usage: reproduce [--quick] [--busy [all|bursty,compile,spin]] [--out DIR] "
                   "[--peers | --no-peers] [--no-callgrind] [--no-plots] [--only "
                   "000|001|002|003|044|045|046]\n";
      return 2;
    }
  }
  if (options.out.empty()) {
    const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
    options.out = ws ? fs::path(ws) / "paper" / "results" : fs::path("paper") / "results";
  }
  try {
    return ag::paper::reproduce(options);
  } catch (const std::exception& e) {
    std::cerr << "reproduce: error: " << e.what() << std::endl;
    return 1;
  }
}
