// Engine overhead (seed 000's no-regression check, issue 2): the tiny graph grad(a*b, {a, b}) and
// the 1000-multiplication scalar chain, ours with pruning off and on, PyTorch from Python and
// libtorch's C++ API beside them, under each measuring condition; callgrind's instruction counts.
#include <cmath>
#include <iostream>
#include <optional>

#include "paper/harness/environment.h"
#include "paper/harness/published.h"
#include "paper/workloads/overhead_rounds.h"
#include "paper/workloads/sections.h"
#include "paper/workloads/tiny_graph.h"

namespace ag::paper {
namespace {

struct Instructions {
  double per_call[2] = {std::nan(""), std::nan("")};  // pruning off, on
  std::string status;                                 // why there are none
  int calls = 0;
};

// Callgrind over the tiny graph's measured calls (paper/tiny_graph_callgrind), per call.
Instructions count_instructions(const Context& context) {
  Instructions in;
  in.calls = context.quick ? 20 : 100;
  int status = 0;
  run_command("valgrind --version >/dev/null 2>&1", &status);
  const std::filesystem::path binary = locate("paper/tiny_graph_callgrind");
  if (!context.callgrind) {
    in.status = "skipped (--no-callgrind)";
  } else if (status != 0) {
    in.status = "valgrind not installed";
  } else if (binary.empty()) {
    in.status = "paper/tiny_graph_callgrind not found";
  } else {
    for (int p = 0; p < 2; ++p) {
      const std::string out = run_command(
          "valgrind --tool=callgrind --callgrind-out-file=/dev/null --collect-atstart=no "
          "'--toggle-collect=*measured_calls*' " +
              shell_quote(binary.string()) + " " + std::to_string(in.calls) + " " +
              std::to_string(p) + " 2>&1",
          &status);
      const size_t at = out.find("Collected :");
      if (status == 0 && at != std::string::npos) {
        in.per_call[p] = std::atof(out.c_str() + at + 11) / in.calls;
      } else if (out.find("AVX-512") != std::string::npos ||
                 out.find("unhandled instruction") != std::string::npos) {
        // Valgrind does not emulate AVX-512, which -c opt builds use on this machine kind.
        in.status =
            "not measured: valgrind cannot run AVX-512 code (rerun with --define=ag_isa=avx2)";
      } else {
        in.status = "callgrind failed";
      }
    }
  }
  return in;
}

}  // namespace

void overhead_section(const Context& context, Report& report) {
  progress(2, "tiny graph grad(a*b, {a, b}) and scalar chain (seed 000, issue 2), and the peers");
  Results& results = *context.results;
  const Peers& peers = *context.peers;
  const int tiny_iters = context.quick ? 2000 : 20000, tiny_rounds = context.quick ? 3 : 15;
  const int chain_iters = context.quick ? 5 : 100, chain_rounds = context.quick ? 3 : 11;
  const ScalarChainInputs chain = make_scalar_chain_inputs(1000);
  const OverheadWorkload tiny{
      "tiny_graph",
      "us",
      1e6,
      [&](const EngineOptions& o) { return time_tiny_graph_us(o, tiny_iters); },
      {"tiny_graph", std::to_string(context.quick ? 200 : tiny_iters / 2)}};
  const OverheadWorkload scalar{
      "scalar_chain",
      "ms",
      1e3,
      [&](const EngineOptions& o) { return time_scalar_chain_ms(chain, o, chain_iters); },
      {"scalar_chain", "1000", std::to_string(context.quick ? 2 : chain_iters / 5)}};
  const std::string tiny_placement = measure_overhead(context, tiny, tiny_rounds);
  const std::string chain_placement = measure_overhead(context, scalar, chain_rounds);
  const Instructions instr = count_instructions(context);
  if (!std::isnan(instr.per_call[0])) {
    results.add("tiny_graph", "pruning off", "instructions per call", instr.per_call[0], "instr");
    results.add("tiny_graph", "pruning on", "instructions per call", instr.per_call[1], "instr");
  }

  const std::string py = peer_name(peers.torch.get(), "Python");
  const std::string cpp = peer_name(peers.libtorch.get(), "C++");
  auto get = [&](const std::string& w, const std::string& variant, const std::string& metric) {
    return results.get(w, variant, metric);
  };
  auto peer_value = [&](const std::string& w, const std::string& variant, const PeerProcess* peer,
                        const std::string& metric, const std::string& unit) {
    const double v = get(w, variant, metric);
    return std::isnan(v) ? peers.missing(peer) : with_unit(v, unit);
  };
  const Published& anchor_tiny = published("history/tiny/libtorch");
  const Published& anchor_chain = published("history/chain/libtorch");

  std::ostringstream& s = report.body;
  s << "### Tiny graph: grad(a*b, {a, b}) on 2x2 float32 (no regression)\n\n"
    << "Forward included, as in the seed's `Timer(\"torch.autograd.grad(a*b, [a, b], "
       "gradient)\")`; median of "
    << tiny_rounds << " interleaved rounds of " << tiny_iters
    << " calls (ours; the peers' rounds sit between ours); quiet rounds: " << tiny_placement
    << " (Note [One CPU for single-threaded rounds], paper/harness/affinity.h). Instructions: "
       "callgrind over "
    << instr.calls
    << " calls of the same workload (paper/tiny_graph_callgrind), per call. The C++ anchor is "
    << anchor_tiny.source << " on " << anchor_tiny.hardware << ".\n\n";
  const double tiny_off = get("tiny_graph", "pruning off", "time per call");
  const double tiny_on = get("tiny_graph", "pruning on", "time per call");
  Table tt({"figure", "pruning off", "pruning on", "on / off", py + " here", cpp + " here",
            "C++ anchor (history)", "published before", "published after"});
  tt.row({"time per call", with_unit(tiny_off, "us"), with_unit(tiny_on, "us"),
          ratio(tiny_on, tiny_off),
          peer_value("tiny_graph", py, peers.torch.get(), "time per call", "us"),
          peer_value("tiny_graph", cpp, peers.libtorch.get(), "time per call", "us"),
          anchor_tiny.text, published("seed000/tiny/time/before").text,
          published("seed000/tiny/time/after").text});
  const std::string none = instr.status;
  tt.row({"instructions per call",
          std::isnan(instr.per_call[0]) ? none : with_unit(instr.per_call[0], "instr"),
          std::isnan(instr.per_call[1]) ? none : with_unit(instr.per_call[1], "instr"),
          ratio(instr.per_call[1], instr.per_call[0]), "not measured", "not measured", "",
          published("seed000/tiny/instructions/before").text,
          published("seed000/tiny/instructions/after").text});
  s << tt.str() << "\n";

  s << "### Scalar chain: grad(y.sum(), {x}), y = x * s repeated 1000 times, x of 4 elements\n\n"
    << "Forward included; median of " << chain_rounds << " interleaved rounds of " << chain_iters
    << " calls; quiet rounds: " << chain_placement << ".\n\n";
  const double chain_off = get("scalar_chain", "pruning off", "time per call");
  const double chain_on = get("scalar_chain", "pruning on", "time per call");
  Table tc({"figure", "pruning off", "pruning on", py + " here", cpp + " here",
            "C++ anchor (history)", "anchor / ours (on)"});
  tc.row({"time per call", with_unit(chain_off, "ms"), with_unit(chain_on, "ms"),
          peer_value("scalar_chain", py, peers.torch.get(), "time per call", "ms"),
          peer_value("scalar_chain", cpp, peers.libtorch.get(), "time per call", "ms"),
          anchor_chain.text, ratio(anchor_chain.value, chain_on)});
  s << tc.str() << "\n";

  s << "Ours (pruning on) against the peers under each condition; a peer's cell is its time and "
       "ours / its (below 1: ours is faster), from the same interleaved rounds.\n\n";
  Table c({"workload", "condition", "ours", py, cpp});
  for (const auto& [w, unit] :
       {std::pair<std::string, std::string>{"tiny_graph", "us"}, {"scalar_chain", "ms"}}) {
    for (const Condition& condition : context.conditions) {
      const std::string metric = "time per call [" + condition.name + "]";
      const double ours = get(w, "pruning on", metric);
      auto cell = [&](const std::string& variant, const PeerProcess* peer) {
        const double v = get(w, variant, metric);
        return peer_cell(std::isnan(v) ? std::nullopt : std::optional<double>(v), ours, unit,
                         peers.missing(peer));
      };
      c.row({w == "tiny_graph" ? "grad(a*b), 2x2" : "1000-mul chain", condition.name,
             with_unit(ours, unit), cell(py, peers.torch.get()), cell(cpp, peers.libtorch.get())});
    }
  }
  s << c.str() << "\n";
  s << "Issue 2 targets (at least 5x below the C++ anchors): tiny graph <= 2 us (ours: "
    << format(tiny_on) << " us, " << ratio(anchor_tiny.value, tiny_on)
    << " below 9.4 us); scalar chain <= 1.5 ms (ours: " << format(chain_on) << " ms, "
    << ratio(anchor_chain.value, chain_on) << " below 7.4 ms).";
  const double cpp_tiny = get("tiny_graph", cpp, "time per call");
  const double cpp_chain = get("scalar_chain", cpp, "time per call");
  if (!std::isnan(cpp_tiny) && !std::isnan(cpp_chain)) {
    auto spread = [&](const std::string& w) {
      const double q1 = get(w, cpp, kBelowFirstQuartile), q3 = get(w, cpp, kBelowThirdQuartile);
      return std::isnan(q1) ? std::string()
                            : " (middle half of the rounds: " + ratio_range(q1, q3) + ")";
    };
    s << " Below " << cpp << " in this run, quiet, as the ratio of the medians: tiny graph "
      << ratio(cpp_tiny, tiny_on) << spread("tiny_graph") << ", scalar chain "
      << ratio(cpp_chain, chain_on) << spread("scalar_chain") << " (issue 17's target: 15x).";
  }
  s << "\n";
}

}  // namespace ag::paper
