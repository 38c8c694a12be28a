// Issue 45: hooks, saved-tensor hooks and activation checkpointing (paper/workloads/
// hook_workloads.h). A 20-layer residual MLP step, plain and checkpointed per layer, ours beside
// PyTorch's torch.utils.checkpoint, with our peak bytes; a 1000-mul chain with an identity tensor
// hook on every intermediate, ours beside libtorch's C++ hooks and PyTorch's Python hooks; the
// rows that must cost nothing with no hook registered (hooks_baseline.h); and the pack calls that
// the guards save, counted by a saved-tensor hook, ours beside PyTorch's. Timed under every
// measuring condition, interleaved, at the run's thread count for all.
#include <cmath>
#include <iostream>

#include "engine/options.h"
#include "ops/cpu/parallel.h"
#include "ops/ops.h"
#include "paper/harness/interleave.h"
#include "paper/workloads/hessian.h"
#include "paper/workloads/hook_workloads.h"
#include "paper/workloads/hooks_baseline.h"
#include "paper/workloads/overhead_rounds.h"
#include "paper/workloads/sections.h"
#include "paper/workloads/timing.h"
#include "paper/workloads/tiny_graph.h"
#include "paper/workloads/variant_rounds.h"

namespace ag::paper {
namespace {

const char* kMlp = "residual_mlp";
const char* kChain = "hooked_chain";
constexpr double kTarget = 1.5;      // issue 45: a checkpointed step at most 1.5x the plain one
constexpr double kHookTarget = 0.5;  // issue 45: ours hooked at most 0.5x libtorch hooked

// "83,623,936 B (79.8 MiB)"; "2,412 B" below a MiB.
std::string bytes_text(double bytes) {
  if (std::isnan(bytes)) return "n/a";
  std::string digits = std::to_string(static_cast<int64_t>(bytes));
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) digits.insert(at, ",");
  constexpr double kMiB = 1024.0 * 1024.0;
  return bytes < kMiB ? digits + " B" : digits + " B (" + format(bytes / kMiB) + " MiB)";
}

// "1 call", "141 calls".
std::string calls_text(double v) {
  return std::isnan(v) ? "n/a" : format(v, 6) + (v == 1 ? " call" : " calls");
}

}  // namespace

void hooks_section(const Context& context, Report& report) {
  progress(7, "hooks, saved-tensor hooks and checkpointing (issue 45), and the peers");
  Results& results = *context.results;
  const Peers& peers = *context.peers;
  PeerProcess* torch = peers.torch.get();
  PeerProcess* libtorch = peers.libtorch.get();
  const bool have_peer = torch && torch->available();
  const std::string peer = torch ? torch->short_name() : "PyTorch";
  const std::string cpp = peer_name(libtorch, "C++");
  const std::string peer_plain = peer + " plain", peer_checkpointed = peer + " checkpointed";
  ResidualMlpConfig mc;
  int chain_length = 1000;
  HessianConfig hc;
  if (context.quick) {
    mc = ResidualMlpConfig{4, 32, 32, 0.25};
    chain_length = 100;
    hc.batch = 16;
    hc.hidden = 32;
  }
  const int rounds = context.quick ? 2 : 11, busy_rounds = context.quick ? 2 : 7;
  const double stretch = context.quick ? 0 : kStretchSeconds;  // Note [A stretch of steps]
  // The MLP step takes about kStretchSeconds alone, so a stretch of that length is one step, the
  // first after the peer's (whose threads have just spun down), and the round-to-round ratio of
  // our two steps swung from 0.64x to 1.34x between runs of one build. Five stretches' worth
  // time several steps back to back.
  const double mlp_stretch = context.quick ? 0 : 5 * kStretchSeconds;
  // libtorch's chain task counts calls, not seconds: about kStretchSeconds of its calls.
  const int libtorch_chain_calls = context.quick ? 1 : 12;
  auto text = [](int v) { return std::to_string(v); };
  const std::vector<std::string> mlp_args = {text(mc.layers), text(mc.batch), text(mc.width),
                                             format(mc.p)};
  auto task = [](std::vector<std::string> head, const std::vector<std::string>& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  // A PyTorch task's last fields: the stretch, and the peer's thread count (0: the run's).
  const std::vector<std::string> torch_tail = {std::to_string(stretch), "0"};
  const std::vector<std::string> torch_mlp_tail = {std::to_string(mlp_stretch), "0"};

  // 1. The checkpointed MLP step and 2. the hooked chain, under every condition.
  const ResidualMlp mlp = make_residual_mlp(mc);
  const std::vector<Variant> mlp_variants = {
      {kMlp, "ours plain", [&] { return residual_mlp_step(mlp, false); }, nullptr, {}},
      {kMlp, "ours checkpointed", [&] { return residual_mlp_step(mlp, true); }, nullptr, {}},
      {kMlp,
       peer_plain,
       {},
       torch,
       task({"checkpoint_mlp"}, task(mlp_args, task({"0"}, torch_mlp_tail)))},
      {kMlp,
       peer_checkpointed,
       {},
       torch,
       task({"checkpoint_mlp"}, task(mlp_args, task({"1"}, torch_mlp_tail)))}};
  const ScalarChainInputs chain = make_scalar_chain_inputs(chain_length);
  const std::string n = text(chain_length), calls = text(libtorch_chain_calls);
  const std::vector<Variant> chain_variants = {
      {kChain, "ours hooked", [&] { return scalar_chain_call(chain, true); }, nullptr, {}},
      {kChain, "ours without hooks", [&] { return scalar_chain_call(chain, false); }, nullptr, {}},
      {kChain, cpp + " hooked", {}, libtorch, {"scalar_chain", n, calls, "1"}},
      {kChain, cpp + " without hooks", {}, libtorch, {"scalar_chain", n, calls, "0"}},
      {kChain, peer + " hooked", {}, torch, task({"hooked_chain", n, "1"}, torch_tail)},
      {kChain, peer + " without hooks", {}, torch, task({"hooked_chain", n, "0"}, torch_tail)}};
  for (const Condition& condition : context.conditions) {
    const Load load(condition);
    const int n_rounds = condition.quiet() ? rounds : busy_rounds;
    const Rounds mlp_rounds =
        measure_variants(context, mlp_variants, condition, n_rounds, mlp_stretch);
    add_middle_half(context, mlp_rounds, 1, 0, kMlp, "ours checkpointed / plain", condition);
    add_middle_half(context, mlp_rounds, 3, 2, kMlp, peer + " checkpointed / plain", condition);
    const Rounds chain_rounds =
        measure_variants(context, chain_variants, condition, n_rounds, stretch);
    add_middle_half(context, chain_rounds, 0, 2, kChain, "ours / " + cpp + ", hooked", condition);
  }
  for (const bool checkpointed : {false, true}) {
    int64_t peak = 0;
    ops::run_with_threads(context.threads,
                          [&] { peak = residual_mlp_peak_bytes(mlp, checkpointed); });
    results.add(kMlp, checkpointed ? "ours checkpointed" : "ours plain", "peak bytes",
                static_cast<double>(peak), "B");
  }
  double gradient_bytes = 0;
  for (const Tensor& w : mlp.weights()) gradient_bytes += static_cast<double>(w.nbytes());
  results.add(kMlp, "ours", "bytes of the gradients returned", gradient_bytes, "B");

  // The rows that must cost nothing with no hook registered.
  std::ostringstream baseline;
  no_hooks_rows(context, rounds, busy_rounds, stretch, baseline);

  // 3. Pack calls of one forward, the guards on and off, and PyTorch's.
  struct PackWorkload {
    std::string name, label;
    std::function<void()> forward;
    std::vector<std::string> task;
  };
  const Mlp hessian_mlp = make_mlp(hc);
  const Tensor hessian_x = make_hessian_input(hc);
  const std::vector<PackWorkload> pack_workloads = {
      {"pack_dropout",
       "seed 003's ((x + 2) * m).sum(), m not requiring grad",
       [] {
         Tensor x = ops::uniform({2, 3, 10, 10}, -1, 1, 21);
         x.set_requires_grad(true);
         const Tensor m = ops::uniform({1, 3, 1, 1}, 0, 2, 22);
         ops::sum((x + 2.0) * m);
       },
       {"pack_calls", "dropout"}},
      {"pack_residual_mlp",
       "the residual MLP's forward and loss (" + text(mc.layers) + " layers), x not requiring grad",
       [&] { residual_mlp_loss(mlp, false); }, task({"pack_calls", "residual_mlp"}, mlp_args)},
      {"pack_hessian_mlp",
       "seed 001's ReLU MLP forward, x [" + text(hc.batch) + ", 16] requiring grad",
       [&] { hessian_mlp.forward(hessian_x); },
       {"pack_calls", "hessian_mlp", text(hc.batch), text(hc.hidden)}}};
  for (const PackWorkload& w : pack_workloads) {
    for (const bool guarded : {true, false}) {
      EngineOptions options = default_options();
      options.guard_saves = guarded;
      const PackCount count = count_packs(options, w.forward);
      const std::string variant = guarded ? "guard_saves on" : "guard_saves off";
      results.add(w.name, variant, "pack calls", static_cast<double>(count.calls), "");
      results.add(w.name, variant, "bytes packed", static_cast<double>(count.bytes), "B");
    }
    if (const auto count = have_peer ? torch->run(w.task) : std::nullopt;
        count && count->size() == 2) {
      results.add(w.name, peer, "pack calls", (*count)[0], "");
      results.add(w.name, peer, "bytes packed", (*count)[1], "B");
    }
  }

  // The report.
  std::ostringstream& s = report.body;
  s << peers.describe() << "\n";
  s << "Every variant of a table in the same interleaved rounds (median of " << rounds
    << " quiet and " << busy_rounds
    << " under each load), all engines at this run's thread count; in a round each variant runs "
       "steps back to back for at least "
    << stretch << " s (" << mlp_stretch
    << " s for the MLP step, which alone takes about the shorter stretch) and counts the mean "
       "per step (Note [A stretch of steps], paper/workloads/timing.h). "
       "The machine is shared: other processes slow every variant alike, so compare the ratios, "
       "and the middle half of the ratios taken round by round.\n\n";

  s << "### Checkpointed MLP step\n\n"
    << mc.layers << " residual blocks h = h + tanh(dropout(tanh(h W1), p = " << format(mc.p)
    << ", a fixed seed per block) W2), W1 [" << mc.width << ", " << 4 * mc.width << "], W2 ["
    << 4 * mc.width << ", " << mc.width << "], on x [" << mc.batch << ", " << mc.width
    << "] not requiring grad; one step is the forward and the gradients of sum(h * h) w.r.t. "
       "every W. Checkpointed: each block under ag::checkpoint (Note [Activation "
       "checkpointing]) in ours, under torch.utils.checkpoint.checkpoint(block, h, W1, W2, p, "
       "use_reentrant=False) in "
    << peer
    << " (its dropout from the global generator, whose state checkpoint saves and restores). "
       "Issue 45's target: a checkpointed step at most "
    << format(kTarget) << "x the plain one.\n\n";
  Table t({"condition", "engine", "plain step", "checkpointed step", "checkpointed / plain",
           "middle half of rounds", "target <= " + format(kTarget) + "x"});
  for (const Condition& condition : context.conditions) {
    const double ours_plain = step_ms(results, kMlp, "ours plain", condition);
    const double ours_ckpt = step_ms(results, kMlp, "ours checkpointed", condition);
    const double peer_p = step_ms(results, kMlp, peer_plain, condition);
    const double peer_c = step_ms(results, kMlp, peer_checkpointed, condition);
    t.row({condition.name, "ours", with_unit(ours_plain, "ms"), with_unit(ours_ckpt, "ms"),
           ratio(ours_ckpt, ours_plain),
           middle_half(results, kMlp, "ours checkpointed / plain", condition),
           verdict_at_most(ours_ckpt / ours_plain, kTarget)});
    t.row({condition.name, peer, have_peer ? with_unit(peer_p, "ms") : peers.missing(torch),
           have_peer ? with_unit(peer_c, "ms") : peers.missing(torch), ratio(peer_c, peer_p),
           middle_half(results, kMlp, peer + " checkpointed / plain", condition), "-"});
    t.row({condition.name, "ours / " + peer, ratio(ours_plain, peer_p), ratio(ours_ckpt, peer_c),
           "-", "-", "-"});
  }
  s << t.str() << "\n";
  const double peak_plain = results.get(kMlp, "ours plain", "peak bytes");
  const double peak_ckpt = results.get(kMlp, "ours checkpointed", "peak bytes");
  s << "Our peak bytes during one step (the CPU allocator's peak, above the live bytes before "
       "the step): plain "
    << bytes_text(peak_plain) << ", checkpointed " << bytes_text(peak_ckpt) << ": "
    << ratio(peak_ckpt, peak_plain)
    << " of the plain step's. The step returns one gradient per weight, "
    << bytes_text(gradient_bytes)
    << " in all, alive together at its end: a floor both peaks include, which checkpointing "
       "cannot lower. Above it, the plain step peaks at "
    << bytes_text(peak_plain - gradient_bytes) << " and the checkpointed one at "
    << bytes_text(peak_ckpt - gradient_bytes) << " ("
    << ratio(peak_ckpt - gradient_bytes, peak_plain - gradient_bytes)
    << "): the values the blocks save, kept for the whole backward in the plain step, one "
       "block's at a time when checkpointed.\n\n";

  s << "### Identity tensor hooks on a " << chain_length << "-mul chain\n\n"
    << "grad(y.sum(), {x}), y = x * 1.0001 repeated " << chain_length
    << " times, x of 4 elements (seed 000's scalar chain); hooked: an identity hook on every "
       "intermediate y. Ours: a C++ std::function returning an undefined tensor, so the gradient "
       "goes on unchanged. "
    << cpp
    << ": register_hook with a C++ lambda returning void, which libtorch wraps to return an "
       "undefined tensor: its cheapest identity, which keeps the gradient without the checks a "
       "returned gradient gets (Note [libtorch's cheapest identity hook], "
       "paper/peers/libtorch_peer.cc); its task times "
    << libtorch_chain_calls << " calls back to back per repetition. " << peer
    << ": a Python lambda returning None, called through the interpreter for each of the "
    << chain_length << " gradients. Forward included. Issue 45's target: ours hooked at most "
    << format(kHookTarget) << "x " << cpp << "'s time with the same hooks.\n\n";
  Table c({"condition", "ours hooked", cpp + " hooked (ours / its)", "middle half of rounds",
           "target <= " + format(kHookTarget) + "x", "ours without hooks",
           cpp + " without hooks (ours / its)", "hooked / without: ours",
           "hooked / without: " + cpp});
  auto cell = [&](double its, double ours, const PeerProcess* p) {
    return peer_cell(std::isnan(its) ? std::nullopt : std::optional<double>(its), ours, "ms",
                     peers.missing(p));
  };
  for (const Condition& condition : context.conditions) {
    const double oh = step_ms(results, kChain, "ours hooked", condition);
    const double ow = step_ms(results, kChain, "ours without hooks", condition);
    const double ch = step_ms(results, kChain, cpp + " hooked", condition);
    const double cw = step_ms(results, kChain, cpp + " without hooks", condition);
    c.row({condition.name, with_unit(oh, "ms"), cell(ch, oh, libtorch),
           middle_half(results, kChain, "ours / " + cpp + ", hooked", condition),
           verdict_at_most(oh / ch, kHookTarget), with_unit(ow, "ms"), cell(cw, ow, libtorch),
           ratio(oh, ow), ratio(ch, cw)});
  }
  s << c.str() << "\n";
  s << "The same rounds, beside " << peer << " from Python:\n\n";
  Table py({"condition", "ours hooked", peer + " hooked (ours / its)", "ours without hooks",
            peer + " without hooks (ours / its)", "hooked / without: ours",
            "hooked / without: " + peer});
  for (const Condition& condition : context.conditions) {
    const double oh = step_ms(results, kChain, "ours hooked", condition);
    const double ow = step_ms(results, kChain, "ours without hooks", condition);
    const double ph = step_ms(results, kChain, peer + " hooked", condition);
    const double pw = step_ms(results, kChain, peer + " without hooks", condition);
    py.row({condition.name, with_unit(oh, "ms"), cell(ph, oh, torch), with_unit(ow, "ms"),
            cell(pw, ow, torch), ratio(oh, ow), ratio(ph, pw)});
  }
  s << py.str() << "\n";
  for (const Condition& condition : context.conditions) {
    if (!condition.quiet()) s << "- " << condition.name << ": " << condition.description << "\n";
  }
  if (context.conditions.size() > 1) s << "\n";

  s << baseline.str();

  s << "### Pack calls that the guards save\n\n"
    << "One forward under a counting saved-tensor hook (ours: SavedTensorsHooks, whose pack "
       "counts the value and returns it; "
    << peer
    << ": torch.autograd.graph.saved_tensors_hooks with the same pack), with guarded saves "
       "(EngineOptions::guard_saves, Note [Guarded saves]) on and off; bytes: numel x element "
       "size of every packed value, each pack counted. The guards choose what is saved before "
       "pack runs, so a slot no formula can read is never packed.\n\n";
  Table k({"forward", "ours, guards on", "ours, guards off", peer});
  for (const PackWorkload& w : pack_workloads) {
    auto cell = [&](const std::string& variant) {
      const double calls = results.get(w.name, variant, "pack calls");
      return std::isnan(calls) ? peers.missing(torch)
                               : calls_text(calls) + ", " +
                                     bytes_text(results.get(w.name, variant, "bytes packed"));
    };
    k.row({w.label, cell("guard_saves on"), cell("guard_saves off"), cell(peer)});
  }
  s << k.str() << "\n";
}

}  // namespace ag::paper
