// Issue 44: views in loops (paper/workloads/view_workloads.h). An RNN that reads x[:, t] and
// writes out[:, t] for 64 time steps, and cat / stack / split / unbind of 1,000 slices, forward
// and backward, ours beside PyTorch from Python under each measuring condition and at one thread
// each; the bytes the RNN's forward saves for backward on both sides; the gradients of both,
// compared through checksums of the same inputs.
#include <cmath>
#include <iostream>

#include "engine/counters.h"
#include "ops/cpu/parallel.h"
#include "paper/harness/interleave.h"
#include "paper/workloads/sections.h"
#include "paper/workloads/timing.h"
#include "paper/workloads/view_workloads.h"

namespace ag::paper {
namespace {

const char* kRnn = "rnn_time_slices";
const std::string kStepTime = "step time";
const std::string kOneThread = "step time at one thread each";
const std::string kFirstQuartile = "ours / it per round, first quartile";
const std::string kThirdQuartile = "ours / it per round, third quartile";
constexpr double kTarget = 0.8;  // issue 44: at most 0.8x PyTorch's time

std::string under(const std::string& metric, const Condition& condition) {
  return metric + " [" + condition.name + "]";
}

std::string join_workload(JoinKind kind) { return std::string("join_") + join_name(kind); }

// One workload's contenders: ours (at `threads` threads, 0: the run's) and the peer's task, whose
// last field is the thread count.
struct Workload {
  std::string name;                                // figures.tsv's workload
  std::string label;                               // the table's row
  std::function<double()> step;                    // one step of ours, returning a checksum
  std::function<std::vector<std::string>()> task;  // the peer's task, without threads
};

// Ours and the peer in interleaved rounds under `condition` at `threads` each (0: the run's
// count), adding `metric` figures (ms per step) and, for the run's count, the middle half of
// ours / its.
void measure(const Context& context, const Workload& w, const Condition& condition, int threads,
             int rounds, double stretch, const std::string& metric) {
  PeerProcess* torch = context.peers->torch.get();
  const std::string peer = torch ? torch->short_name() : "PyTorch";
  std::vector<Contender> contenders = {
      {"ours", [&] {
         double ms = 0;
         ops::run_with_threads(threads > 0 ? threads : context.threads,
                               [&] { ms = seconds_per_call_over(stretch, w.step) * 1e3; });
         return std::optional<double>(ms);
       }}};
  if (torch && torch->available()) {
    std::vector<std::string> task = w.task();
    task.push_back(std::to_string(stretch));
    task.push_back(std::to_string(threads));
    contenders.push_back({peer, [torch, task]() -> std::optional<double> {
                            const auto v = torch->value(task);
                            return v ? std::optional<double>(*v * 1e3) : std::nullopt;
                          }});
  }
  const Rounds measured = interleaved_rounds(rounds, contenders);
  const std::vector<std::optional<double>> med = measured.medians();
  std::cout << "  " << w.label << ", " << metric << ":";
  for (size_t c = 0; c < contenders.size(); ++c) {
    if (!med[c]) continue;
    context.results->add(w.name, contenders[c].name, metric, *med[c], "ms");
    std::cout << " " << contenders[c].name << " " << format(*med[c]) << " ms;";
  }
  std::cout << std::endl;
  if (threads == 0 && contenders.size() == 2 && med[1]) {
    const auto [q1, q3] = measured.middle_half(0, 1);
    context.results->add(w.name, peer, under(kFirstQuartile, condition), q1, "x");
    context.results->add(w.name, peer, under(kThirdQuartile, condition), q3, "x");
  }
}

// "met (0.41x)" or "missed by 12% (0.9x)".
std::string verdict(double ours, double peer) {
  if (std::isnan(ours) || std::isnan(peer) || peer == 0) return "n/a";
  const double r = ours / peer;
  return r <= kTarget
             ? "met (" + ratio(ours, peer) + ")"
             : "missed by " + format(100 * (r / kTarget - 1)) + "% (" + ratio(ours, peer) + ")";
}

// "83,623,936 B (79.8 MiB)": a byte count in full, and in MiB.
std::string bytes_text(double bytes) {
  if (std::isnan(bytes)) return "n/a";
  std::string digits = std::to_string(static_cast<int64_t>(bytes));
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) digits.insert(at, ",");
  return digits + " B (" + format(bytes / (1024.0 * 1024.0)) + " MiB)";
}

// The relative difference of two checksums, as text.
std::string agreement(double ours, double peer) {
  if (std::isnan(peer)) return "n/a";
  const double scale = std::max(std::fabs(ours), std::fabs(peer));
  return scale == 0 ? "0" : format(std::fabs(ours - peer) / scale);
}

}  // namespace

void views_section(const Context& context, Report& report) {
  progress(6,
           "views in loops (issue 44): RNN over time slices, cat/stack/split of 1,000 slices, "
           "and PyTorch");
  Results& results = *context.results;
  const Peers& peers = *context.peers;
  PeerProcess* torch = peers.torch.get();
  const bool have_peer = torch && torch->available();
  const std::string peer = torch ? torch->short_name() : "PyTorch";
  RnnConfig rc;
  JoinConfig jc;
  if (context.quick) {
    rc = RnnConfig{16, 8, 32};
    jc = JoinConfig{100, 8};
  }
  const int rounds = context.quick ? 2 : 11, busy_rounds = context.quick ? 2 : 7;
  const double stretch = context.quick ? 0 : kStretchSeconds;  // Note [A stretch of steps]
  const std::string rnn_size =
      std::to_string(rc.batch) + ", " + std::to_string(rc.steps) + ", " + std::to_string(rc.width);

  const RnnInputs rnn_in = make_rnn_inputs(rc);
  std::vector<Workload> workloads;
  workloads.push_back({kRnn, "RNN, x [" + rnn_size + "]",
                       [&] { return static_cast<double>(rnn_step(rnn_in, rc).size()); },
                       [&] {
                         return std::vector<std::string>{"rnn", std::to_string(rc.batch),
                                                         std::to_string(rc.steps),
                                                         std::to_string(rc.width)};
                       }});
  std::vector<JoinInputs> join_in;
  for (const JoinKind kind : kJoinKinds) join_in.push_back(make_join_inputs(kind, jc));
  for (size_t k = 0; k < join_in.size(); ++k) {
    const JoinKind kind = kJoinKinds[k];
    workloads.push_back(
        {join_workload(kind), join_label(kind, jc.slices, jc.width),
         [&join_in, k] { return static_cast<double>(join_step(join_in[k]).size()); },
         [kind, jc] {
           return std::vector<std::string>{"join", join_name(kind), std::to_string(jc.slices),
                                           std::to_string(jc.width)};
         }});
  }

  // Time per step: under every condition at the run's thread count, then quiet at one thread
  // each.
  for (const Condition& condition : context.conditions) {
    const Load load(condition);
    for (const Workload& w : workloads) {
      measure(context, w, condition, 0, condition.quiet() ? rounds : busy_rounds, stretch,
              under(kStepTime, condition));
    }
  }
  for (const Workload& w : workloads) {
    const std::string quiet = under(kStepTime, context.conditions.front());
    for (const std::string& variant : {std::string("ours"), peer}) {
      const double v = results.get(w.name, variant, quiet);
      if (!std::isnan(v)) results.add(w.name, variant, kStepTime, v, "ms");
    }
  }
  if (context.threads > 1) {
    for (const Workload& w : workloads) {
      measure(context, w, context.conditions.front(), 1, rounds, stretch, kOneThread);
    }
  }

  // Bytes saved for backward by the RNN's forward, and the gradients of both engines on the same
  // inputs.
  reset_counters();
  const int64_t ours_saved = rnn_forward(rnn_in, rc).bytes_saved;
  results.add(kRnn, "ours", "bytes saved for backward", static_cast<double>(ours_saved), "B");
  const std::vector<std::string> rnn_args = {std::to_string(rc.batch), std::to_string(rc.steps),
                                             std::to_string(rc.width)};
  auto peer_run = [&](std::vector<std::string> task) -> std::optional<std::vector<double>> {
    return have_peer ? torch->run(task) : std::nullopt;
  };
  std::vector<std::string> saved_task = {"rnn_saved_bytes"};
  saved_task.insert(saved_task.end(), rnn_args.begin(), rnn_args.end());
  if (const auto saved = peer_run(saved_task); saved && saved->size() == 2) {
    results.add(kRnn, peer, "bytes saved for backward", (*saved)[0], "B");
    results.add(kRnn, peer, "distinct bytes saved for backward", (*saved)[1], "B");
  }
  results.add(kRnn, "ours", "gradient checksum", gradient_checksum(rnn_step(rnn_in, rc)), "");
  std::vector<std::string> checksum_task = {"rnn_checksum"};
  checksum_task.insert(checksum_task.end(), rnn_args.begin(), rnn_args.end());
  if (const auto sum = peer_run(checksum_task)) {
    results.add(kRnn, peer, "gradient checksum", sum->front(), "");
  }
  for (size_t k = 0; k < join_in.size(); ++k) {
    const JoinKind kind = kJoinKinds[k];
    results.add(join_workload(kind), "ours", "gradient checksum",
                gradient_checksum(join_step(join_in[k])), "");
    if (const auto sum = peer_run({"join_checksum", join_name(kind), std::to_string(jc.slices),
                                   std::to_string(jc.width)})) {
      results.add(join_workload(kind), peer, "gradient checksum", sum->front(), "");
    }
  }

  // The report.
  std::ostringstream& s = report.body;
  s << peers.describe() << "\n";
  s << "Two workloads that read and write through views in a loop, forward and backward, each "
       "written the same way in both engines (paper/workloads/view_workloads.h, and its peer "
       "tasks in paper/peers/torch_peer.py), on inputs whose every element is the same closed-form "
       "pattern of its index on both sides:\n\n"
    << "- **RNN over time slices**: x [" << rnn_size << "] (batch, steps, input), W and U ["
    << rc.width << ", " << rc.width << "], all requiring grad; h = zeros [" << rc.batch << ", "
    << rc.width << "], out = zeros [" << rnn_size
    << "]; per step t, h = tanh(x[:, t] @ W + h @ U) and out[:, t] = h (a copy_ into a select "
       "view, which rebases out's history: PyTorch's CopySlices); then grad(out.sum(), [x, W, "
       "U]). Forward included.\n"
    << "- **Joining " << jc.slices << " slices**: forward, then grad(y, inputs, G) with G a "
    << "fixed [" << jc.slices << ", " << jc.width
    << "] weighting: cat and stack of that many leaves, and the slices made by views of one leaf "
       "x: cat(x.split(1)) and stack(x.unbind()).\n\n"
    << "Time per step: median of " << rounds << " interleaved rounds quiet and " << busy_rounds
    << " under each load; in a round each contender runs steps back to back for at least "
    << stretch
    << " s (one step where a step takes longer; Note [A stretch of steps] in "
       "paper/workloads/timing.h) and counts the mean per step. A PyTorch cell is its time and "
       "ours / its (below 1: ours is faster); the next column gives the middle half (first to "
       "third quartile) of ours / its taken round by round. Issue 44's target: at most "
    << format(kTarget) << "x PyTorch 2.15's time.\n\n";
  Table t({"workload", "condition", "ours", peer, "ours / " + peer + ", middle half of rounds",
           "target <= " + format(kTarget) + "x"});
  for (const Workload& w : workloads) {
    for (const Condition& condition : context.conditions) {
      const std::string metric = under(kStepTime, condition);
      const double ours = results.get(w.name, "ours", metric);
      const double theirs = results.get(w.name, peer, metric);
      const double q1 = results.get(w.name, peer, under(kFirstQuartile, condition));
      const double q3 = results.get(w.name, peer, under(kThirdQuartile, condition));
      t.row({w.label, condition.name, with_unit(ours, "ms"),
             peer_cell(std::isnan(theirs) ? std::nullopt : std::optional<double>(theirs), ours,
                       "ms", peers.missing(torch)),
             std::isnan(q1) ? "-" : ratio_range(q1, q3), verdict(ours, theirs)});
    }
  }
  s << t.str() << "\n";
  for (const Condition& condition : context.conditions) {
    if (!condition.quiet()) s << "- " << condition.name << ": " << condition.description << "\n";
  }
  if (context.conditions.size() > 1) s << "\n";
  if (context.threads > 1) {
    s << "Both engines at one thread each (ours under ops::run_with_threads(1), PyTorch under "
         "torch.set_num_threads(1)), quiet, in interleaved rounds (median of "
      << rounds << "):\n\n";
    Table o(
        {"workload", "ours, 1 thread", peer + ", 1 thread", "target <= " + format(kTarget) + "x"});
    for (const Workload& w : workloads) {
      const double ours = results.get(w.name, "ours", kOneThread);
      const double theirs = results.get(w.name, peer, kOneThread);
      o.row({w.label, with_unit(ours, "ms"),
             peer_cell(std::isnan(theirs) ? std::nullopt : std::optional<double>(theirs), ours,
                       "ms", peers.missing(torch)),
             verdict(ours, theirs)});
    }
    s << o.str() << "\n";
    // How the peer's time at the run's thread count compares with its own at one thread: on a
    // shared machine its OpenMP threads can lose more to waiting than the second thread brings.
    const std::string quiet = under(kStepTime, context.conditions.front());
    const double many = results.get(kRnn, peer, quiet);
    const double one = results.get(kRnn, peer, kOneThread);
    if (!std::isnan(many) && !std::isnan(one)) {
      s << "In this run " << peer << "'s RNN step took " << ratio(many, one) << " as long at "
        << context.threads << " threads as at one (ours: "
        << ratio(results.get(kRnn, "ours", quiet), results.get(kRnn, "ours", kOneThread))
        << "); the one-thread row compares the two engines' work without the cost of waiting "
           "for threads on a shared machine.\n\n";
    }
  }

  const double peer_saved = results.get(kRnn, peer, "bytes saved for backward");
  const double peer_distinct = results.get(kRnn, peer, "distinct bytes saved for backward");
  s << "Bytes the RNN's forward saves for backward. Ours: the engine's counter (Counters::"
       "bytes_saved), numel x element size of every tensor a forward op saves, each save "
       "counted. PyTorch: the same sum over every tensor its forward packs "
       "(torch.autograd.graph.saved_tensors_hooks). Both count a saved view (x[:, t], which mm "
       "saves for W's gradient) by its own elements, and a tensor saved by several ops (W and U "
       "by every step's product; h by tanh and by the next step's product) once per save. Issue "
       "44's target: no more than PyTorch's.\n\n";
  Table b({"figure", "ours", peer, "ours / " + peer, "target: at most " + peer + "'s"});
  b.row({"bytes saved for backward", bytes_text(static_cast<double>(ours_saved)),
         std::isnan(peer_saved) ? peers.missing(torch) : bytes_text(peer_saved),
         ratio(static_cast<double>(ours_saved), peer_saved),
         std::isnan(peer_saved) ? "n/a"
         : static_cast<double>(ours_saved) <= peer_saved
             ? "met"
             : "missed by " + bytes_text(static_cast<double>(ours_saved) - peer_saved)});
  s << b.str() << "\n";
  if (!std::isnan(peer_distinct)) {
    s << "Counted once per distinct tensor (the same storage, offset, shape and strides), " << peer
      << "'s saves come to " << bytes_text(peer_distinct)
      << ": the sums above count the shared W and U at every step.\n\n";
  }

  s << "Both engines compute the same gradients: checksums of the gradients of one step "
       "(gradient_checksum: the sum of g_k x (k mod 7 + 1) over every element k of the "
       "gradients, in order, in float64), and their relative difference; float32 rounding "
       "differs between the engines' products and sums, so the RNN's agree to rounding, the "
       "joins' (copies of G's elements) exactly.\n\n";
  Table g({"workload", "ours", peer, "relative difference"});
  for (const Workload& w : workloads) {
    const double ours = results.get(w.name, "ours", "gradient checksum");
    const double theirs = results.get(w.name, peer, "gradient checksum");
    g.row({w.label, format(ours, 9), std::isnan(theirs) ? peers.missing(torch) : format(theirs, 9),
           agreement(ours, theirs)});
  }
  s << g.str() << "\n";
}

}  // namespace ag::paper
