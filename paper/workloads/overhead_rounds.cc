#include "paper/workloads/overhead_rounds.h"

#include <iostream>
#include <optional>

#include "paper/harness/affinity.h"
#include "paper/harness/interleave.h"

namespace ag::paper {

EngineOptions pruning(bool on) {
  EngineOptions o;
  o.prune_by_topo_nr = on;
  o.prune_by_reachability = on;
  return o;
}

std::string peer_name(const PeerProcess* peer, const char* language) {
  return (peer ? peer->short_name() : std::string(language[0] == 'P' ? "PyTorch" : "libtorch")) +
         " (" + language + ")";
}

std::string measure_overhead(const Context& context, const OverheadWorkload& w, int rounds) {
  Peers& peers = *context.peers;
  std::string placement;
  for (const Condition& condition : context.conditions) {
    const Load load(condition);
    std::vector<Contender> contenders;
    for (bool on : {false, true}) {
      if ((!condition.quiet() || !w.pruning_off_too) && !on) continue;
      contenders.push_back({on ? "pruning on" : "pruning off",
                            [&w, on] { return std::optional<double>(w.ours(pruning(on))); }});
    }
    std::vector<pid_t> peer_pids;
    for (PeerProcess* peer : {peers.torch.get(), peers.libtorch.get()}) {
      if (!peer || !peer->available()) continue;
      if (peer == peers.torch.get() && !w.python_peer) continue;
      peer_pids.push_back(peer->pid());
      contenders.push_back({peer_name(peer, peer == peers.torch.get() ? "Python" : "C++"),
                            [peer, &w]() -> std::optional<double> {
                              const auto v = peer->value(w.peer_task);
                              return v ? std::optional<double>(*v * w.scale) : std::nullopt;
                            }});
    }
    std::optional<PinnedToOneCpu> pinned;
    if (condition.quiet()) {
      pinned.emplace(peer_pids);
      placement = pinned->pinned() ? "ours and the peers pinned to one CPU, the same for all"
                                   : "not pinned to one CPU (" + pinned->error() + ")";
    }
    const Rounds measured = interleaved_rounds(rounds, contenders);
    pinned.reset();
    const std::vector<std::optional<double>> med = measured.medians();
    // How many times below the C++ peer ours is, round by round: the spread of the ratio.
    const std::optional<size_t> ours_at = position(contenders, "pruning on");
    const std::optional<size_t> cpp_at =
        position(contenders, peer_name(peers.libtorch.get(), "C++"));
    if (ours_at && cpp_at) {
      const auto [q1, q3] = measured.middle_half(*cpp_at, *ours_at);
      const std::string& cpp = contenders[*cpp_at].name;
      const std::string under = " [" + condition.name + "]";
      context.results->add(w.workload, cpp, kBelowFirstQuartile + under, q1, "x");
      context.results->add(w.workload, cpp, kBelowThirdQuartile + under, q3, "x");
      if (condition.quiet()) {
        context.results->add(w.workload, cpp, kBelowFirstQuartile, q1, "x");
        context.results->add(w.workload, cpp, kBelowThirdQuartile, q3, "x");
      }
    }
    std::cout << "  " << w.workload << ", " << condition.name << ":";
    for (size_t c = 0; c < contenders.size(); ++c) {
      if (!med[c]) continue;
      context.results->add(w.workload, contenders[c].name, "time per call [" + condition.name + "]",
                           *med[c], w.unit);
      if (condition.quiet())
        context.results->add(w.workload, contenders[c].name, "time per call", *med[c], w.unit);
      std::cout << " " << contenders[c].name << " " << format(*med[c]) << " " << w.unit << ";";
    }
    std::cout << std::endl;
  }
  return placement;
}

}  // namespace ag::paper
