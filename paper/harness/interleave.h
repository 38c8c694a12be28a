// Interleaved comparisons between our engine and the peers: every round measures each contender
// once, in turn, so that a slow spell of a shared machine (or a burst of a competing load) lands
// on all of them alike, and each contender's figure is the median of its rounds.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "paper/workloads/timing.h"

namespace ag::paper {

struct Contender {
  std::string name;
  // One repetition: its time (any unit), or nullopt when this contender has no figure here (a
  // missing or failed peer); it is then left out of later rounds.
  std::function<std::optional<double>()> measure;
  int rounds = 0;  // take part in the first `rounds` rounds only (slow peers); 0: in all
};

// Where the contender called `name` is in `contenders`, if it is there.
inline std::optional<size_t> position(const std::vector<Contender>& contenders,
                                      const std::string& name) {
  for (size_t c = 0; c < contenders.size(); ++c) {
    if (contenders[c].name == name) return c;
  }
  return std::nullopt;
}

// Note [Settle between contenders]
// A peer's threads do not stop when its step does: PyTorch's OpenMP workers (libgomp) spin for
// about 15 ms after each parallel region before they sleep (measured here: a PyTorch process that
// runs a 2.8 ms product every 200 ms burns 18 ms of CPU each time), and XLA's pool spins too.
// A contender timed straight after another process's step would share the cores with that spin:
// in reproduce's busy rounds, where ours follows the peers, our hessian step took 32 ms against
// 23 ms alone under the same load. So every timed repetition starts after a pause long enough
// for any spin to end, the same pause for every contender.
constexpr std::chrono::milliseconds kSettle{50};

// Every contender's figure in every round: samples[c][r] is contender c's repetition in round r,
// or nullopt where it had none (it sat the round out, or had failed before).
struct Rounds {
  std::vector<std::vector<std::optional<double>>> samples;

  // Each contender's median over its rounds (nullopt for one without any figure).
  std::vector<std::optional<double>> medians() const {
    std::vector<std::optional<double>> out;
    for (const auto& rounds : samples) {
      std::vector<double> v;
      for (const auto& x : rounds) {
        if (x) v.push_back(*x);
      }
      out.push_back(v.empty() ? std::nullopt : std::optional<double>(median(v)));
    }
    return out;
  }

  // Contender a's figure over contender b's, round by round, in the rounds both took part in.
  // The ratio of two medians hides how much it moves from round to round on a busy machine; the
  // spread of these paired ratios shows it.
  std::vector<double> paired_ratios(size_t a, size_t b) const {
    std::vector<double> out;
    for (size_t r = 0; r < samples[a].size(); ++r) {
      if (samples[a][r] && samples[b][r] && *samples[b][r] != 0) {
        out.push_back(*samples[a][r] / *samples[b][r]);
      }
    }
    return out;
  }

  // The first and third quartiles of paired_ratios(a, b): where the middle half of its rounds lie.
  std::pair<double, double> middle_half(size_t a, size_t b) const {
    const std::vector<double> ratios = paired_ratios(a, b);
    return {quantile(ratios, 0.25), quantile(ratios, 0.75)};
  }
};

// Runs one untimed warm-up of each contender, then `rounds` interleaved rounds, each repetition
// after the settling pause.
inline Rounds interleaved_rounds(int rounds, const std::vector<Contender>& contenders) {
  std::vector<bool> active(contenders.size());
  for (size_t c = 0; c < contenders.size(); ++c) {
    active[c] = contenders[c].measure().has_value();
  }
  Rounds out;
  out.samples.assign(contenders.size(), std::vector<std::optional<double>>(rounds));
  for (int r = 0; r < rounds; ++r) {
    for (size_t c = 0; c < contenders.size(); ++c) {
      if (!active[c] || (contenders[c].rounds > 0 && r >= contenders[c].rounds)) continue;
      std::this_thread::sleep_for(kSettle);
      out.samples[c][r] = contenders[c].measure();
      active[c] = out.samples[c][r].has_value();
    }
  }
  return out;
}

// interleaved_rounds(), then each contender's median.
inline std::vector<std::optional<double>> interleaved(int rounds,
                                                      const std::vector<Contender>& contenders) {
  return interleaved_rounds(rounds, contenders).medians();
}

}  // namespace ag::paper
