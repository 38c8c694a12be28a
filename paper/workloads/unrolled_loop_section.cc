// Seed 000's unrolled loop (PR 52180, issue 12635): time per 100 steps with each pruning cut off
// and on, PyTorch's loop beside it, and ours vs PyTorch under each measuring condition.
#include <cmath>
#include <iostream>

#include "paper/harness/published.h"
#include "paper/workloads/sections.h"
#include "paper/workloads/timing.h"
#include "paper/workloads/unrolled_loop.h"

namespace ag::paper {
namespace {

const char* kWorkload = "unrolled_loop";

EngineOptions pruning(bool topo, bool reach) {
  EngineOptions o;
  o.prune_by_topo_nr = topo;
  o.prune_by_reachability = reach;
  return o;
}

// Per-block medians over repetitions ([rep][block] -> [block]).
std::vector<double> block_medians(const std::vector<std::vector<double>>& reps) {
  std::vector<double> med;
  for (size_t b = 0; !reps.empty() && b < reps.front().size(); ++b) {
    std::vector<double> samples;
    for (const auto& r : reps) samples.push_back(r[b]);
    med.push_back(median(samples));
  }
  return med;
}

// Last over first block of a least-squares line through all blocks: growth over the run, robust
// to one noisy block. NaN when the line starts at or below zero.
double fitted_growth(const std::vector<double>& blocks) {
  const double n = static_cast<double>(blocks.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    sx += b;
    sy += blocks[b];
    sxx += double(b) * b;
    sxy += b * blocks[b];
  }
  const double slope = n > 1 ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0;
  const double intercept = (sy - slope * sx) / n;
  return intercept > 0 ? (intercept + slope * (n - 1)) / intercept : std::nan("");
}

// Adds the figures of one variant's blocks (seconds) under `condition`.
void add_blocks(Results& results, const std::string& variant, const std::vector<double>& med,
                int block, const Condition& condition) {
  if (med.empty()) return;
  if (condition.quiet()) {
    for (size_t b = 0; b < med.size(); ++b) {
      results.add(kWorkload, variant, "time per 100 steps@step=" + std::to_string((b + 1) * block),
                  med[b] * 1e3, "ms");
    }
    results.add(kWorkload, variant, "first block", med.front() * 1e3, "ms");
    results.add(kWorkload, variant, "last block", med.back() * 1e3, "ms");
    results.add(kWorkload, variant, "last/first block", med.back() / med.front(), "x");
    const double growth = fitted_growth(med);
    if (!std::isnan(growth))
      results.add(kWorkload, variant, "fitted last/first block", growth, "x");
  }
  const std::string at = " [" + condition.name + "]";
  results.add(kWorkload, variant, "median block" + at, median(med) * 1e3, "ms");
  results.add(kWorkload, variant, "fitted last/first block" + at, fitted_growth(med), "x");
}

}  // namespace

void unrolled_loop_section(const Context& context, Report& report) {
  progress(1,
           "unrolled loop (seed 000): pruning off / on / topo_nr only / reachability only, "
           "and the peers");
  Results& results = *context.results;
  PeerProcess* torch = context.peers->torch.get();
  UnrolledLoopConfig uc;
  if (context.quick) uc.steps = 200;
  // The variants with a pruning cut take ~0.1 s per run, the others ~10 s: the cheap ones get more
  // repetitions (every repetition interleaves all variants that still have repetitions to do).
  const int reps = context.quick ? 1 : 3, cheap_reps = context.quick ? 1 : 9;
  const std::vector<std::pair<std::string, EngineOptions>> variants = {
      {"pruning off", pruning(false, false)},
      {"pruning on", pruning(true, true)},
      {"topo_nr only", pruning(true, false)},
      {"reachability only", pruning(false, true)}};
  {
    UnrolledLoopConfig warm = uc;
    warm.steps = uc.block;
    run_unrolled_loop(warm, EngineOptions());  // warm-up (first-use allocations, caches)
  }
  // Busy conditions run a shorter loop (the peer's 2000 steps take minutes under load).
  UnrolledLoopConfig busy_uc = uc;
  busy_uc.steps = std::min(uc.steps, 500);
  const std::string peer_variant = torch ? torch->short_name() : "PyTorch";
  if (torch) torch->run({"unrolled_loop", std::to_string(uc.block), std::to_string(uc.block)});

  // Per condition: [variant][rep][block] for ours, [rep][block] for the peer. Busy conditions
  // run only the pruned loop beside the peer (the unpruned one takes minutes).
  std::vector<long long> discovered(variants.size());
  for (const Condition& condition : context.conditions) {
    const Load load(condition);
    std::vector<std::vector<std::vector<double>>> blocks(variants.size());
    std::vector<std::vector<double>> peer_blocks;
    const int rounds = condition.quiet() ? cheap_reps : reps;
    const UnrolledLoopConfig& config = condition.quiet() ? uc : busy_uc;
    const std::vector<std::string> peer_task = {"unrolled_loop", std::to_string(config.steps),
                                                std::to_string(config.block)};
    for (int r = 0; r < rounds; ++r) {
      for (size_t v = 0; v < variants.size(); ++v) {
        const bool cheap = variants[v].second.prune_by_topo_nr;
        if (!condition.quiet() && variants[v].first != "pruning on") continue;
        if (!cheap && r >= reps) continue;
        UnrolledLoopRun run = run_unrolled_loop(config, variants[v].second);
        blocks[v].push_back(run.block_seconds);
        discovered[v] = run.nodes_expanded;
      }
      // The peer takes part in the first `reps` rounds (its loop costs as much as our unpruned
      // one).
      if (auto b = torch && r < reps ? torch->run(peer_task) : std::nullopt) {
        peer_blocks.push_back(*b);
      }
    }
    for (size_t v = 0; v < variants.size(); ++v) {
      const std::vector<double> med = block_medians(blocks[v]);
      add_blocks(results, variants[v].first, med, uc.block, condition);
    }
    add_blocks(results, peer_variant, block_medians(peer_blocks), uc.block, condition);
    std::cout
        << "  " << condition.name << ": pruning on, median block "
        << format(results.get(kWorkload, "pruning on", "median block [" + condition.name + "]"))
        << " ms; " << peer_variant << " "
        << format(results.get(kWorkload, peer_variant, "median block [" + condition.name + "]"))
        << " ms" << std::endl;
  }
  for (size_t v = 0; v < variants.size(); ++v) {
    results.add(kWorkload, variants[v].first, "nodes discovered",
                static_cast<double>(discovered[v]), "nodes");
  }

  std::ostringstream& s = report.body;
  s << "### Unrolled loop: differentiable SGD, time per 100 steps\n\n"
    << "Linear classifier 32x3 + bias 3, batch " << uc.batch << ", cross entropy, grad(create_graph"
    << "=true) w.r.t. the current parameters, " << uc.steps << " steps; per block, the median of "
    << cheap_reps << " runs with a pruning cut and " << reps << " without (and " << reps
    << " of the peer's), interleaved, after a warm-up run. Pruning = the "
       "topological-number cut and the reachability-signature cut (both are ours to switch; "
       "PyTorch has only the first). Published: "
    << published("seed000/loop/first/before").source << ", on "
    << published("seed000/loop/first/before").hardware << ".\n\n";
  const std::string peer_column =
      torch && torch->available() ? torch->short_name() + " here" : "PyTorch here";
  Table t({"figure", "pruning off", "pruning on", "topo_nr only", "reachability only", peer_column,
           "published before", "published after"});
  const int nblocks = uc.steps / uc.block;
  auto loop_row = [&](const std::string& label, const std::string& metric, const std::string& unit,
                      const std::string& published_key) {
    std::vector<std::string> r = {label};
    for (const auto& v : variants)
      r.push_back(with_unit(results.get(kWorkload, v.first, metric), unit));
    const double peer = results.get(kWorkload, peer_variant, metric);
    r.push_back(std::isnan(peer) ? context.peers->missing(torch) : with_unit(peer, unit));
    r.push_back(published_key.empty() ? "" : published(published_key + "/before").text);
    r.push_back(published_key.empty() ? "" : published(published_key + "/after").text);
    t.row(r);
  };
  const std::string last_step = std::to_string(uc.steps);
  loop_row("steps 1-100", "first block", "ms", "seed000/loop/first");
  if (nblocks > 2) {
    const std::string mid = std::to_string((nblocks / 2) * uc.block);
    loop_row("steps " + std::to_string((nblocks / 2 - 1) * uc.block + 1) + "-" + mid,
             "time per 100 steps@step=" + mid, "ms", "seed000/loop/middle");
  }
  loop_row("steps " + std::to_string(uc.steps - uc.block + 1) + "-" + last_step, "last block", "ms",
           "seed000/loop/last");
  loop_row("last / first block", "last/first block", "x", "seed000/loop/growth");
  loop_row("last / first, least-squares line through all blocks", "fitted last/first block", "x",
           "");
  {
    std::vector<std::string> r = {"nodes visited by discovery (whole run)"};
    for (const auto& v : variants)
      r.push_back(format(results.get(kWorkload, v.first, "nodes discovered")));
    r.insert(r.end(), {"", "", ""});
    t.row(r);
  }
  s << t.str() << "\n";
  if (context.plots) s << "![time per 100 steps](unrolled_loop.png)\n\n";

  s << "Ours (pruning on) against " << peer_variant
    << " under each condition: the median over blocks of the per-block medians, and the growth "
       "over the run (least-squares line, last / first block); busy conditions run "
    << busy_uc.steps << " steps. Ratio = ours / peer, both from the same interleaved rounds.\n\n";
  Table p({"condition", "ours: per 100 steps", "ours: last / first",
           peer_variant + ": per 100 steps", peer_variant + ": last / first", "ours / peer"});
  for (const Condition& condition : context.conditions) {
    const std::string at = " [" + condition.name + "]";
    const double ours = results.get(kWorkload, "pruning on", "median block" + at);
    const double peer = results.get(kWorkload, peer_variant, "median block" + at);
    p.row({condition.name, with_unit(ours, "ms"),
           format(results.get(kWorkload, "pruning on", "fitted last/first block" + at)) + "x",
           std::isnan(peer) ? context.peers->missing(torch) : with_unit(peer, "ms"),
           std::isnan(peer)
               ? ""
               : format(results.get(kWorkload, peer_variant, "fitted last/first block" + at)) + "x",
           ratio(ours, peer)});
  }
  s << p.str() << "\n";
}

}  // namespace ag::paper
