// Interleaved comparisons between our engine and the peers: every round measures each contender
// once, in turn, so that a slow spell of a shared machine (or a burst of a competing load) lands
// on all of them alike, and each contender's figure is the median of its rounds.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
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

// Note [Settle between contenders]
// A peer's threads do not stop when its step does: PyTorch's OpenMP workers (libgomp) spin for
// about 15 ms after each parallel region before they sleep (measured here: a PyTorch process that
// runs a 2.8 ms product every 200 ms burns 18 ms of CPU each time), and XLA's pool spins too.
// A contender timed straight after another process's step would share the cores with that spin:
// in reproduce's busy rounds, where ours follows the peers, our hessian step took 32 ms against
// 23 ms alone under the same load. So every timed repetition starts after a pause long enough
// for any spin to end, the same pause for every contender.
constexpr std::chrono::milliseconds kSettle{50};

// Runs one untimed warm-up of each contender, then `rounds` interleaved rounds, each repetition
// after the settling pause; returns each contender's median (nullopt for one without any
// figure).
inline std::vector<std::optional<double>> interleaved(int rounds,
                                                      const std::vector<Contender>& contenders) {
  std::vector<bool> active(contenders.size());
  for (size_t c = 0; c < contenders.size(); ++c) {
    active[c] = contenders[c].measure().has_value();
  }
  std::vector<std::vector<double>> samples(contenders.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t c = 0; c < contenders.size(); ++c) {
      if (!active[c] || (contenders[c].rounds > 0 && r >= contenders[c].rounds)) continue;
      std::this_thread::sleep_for(kSettle);
      const std::optional<double> v = contenders[c].measure();
      if (v) samples[c].push_back(*v);
      active[c] = v.has_value();
    }
  }
  std::vector<std::optional<double>> medians;
  for (const auto& s : samples) {
    medians.push_back(s.empty() ? std::nullopt : std::optional<double>(median(s)));
  }
  return medians;
}

}  // namespace ag::paper
