// `bazel run -c opt //paper:reproduce [-- --quick] [--out DIR] [--no-peers] [--no-callgrind]
// [--no-plots]`: runs every workload of the paper with each optimization off and on, runs the
// PyTorch peers (paper/peers/*.py) in the same invocation, right after our own measurement of the
// same workload, and writes
//   DIR/figures.tsv        one row per measured figure (ours and the peer's)
//   DIR/seed_NNN_*.md      one Markdown table per seed: ours beside the published figures and the
//                          peer's on this machine
//   DIR/*.png              curves (via paper/plot.py, run with /usr/bin/python3 + matplotlib)
// DIR defaults to paper/results in the source tree (under `bazel run`), else ./paper/results.
// Ratios are always between figures of this one run; off/on repetitions are interleaved and
// medians taken. --quick runs a small version of everything (CI's smoke test); its figures are
// not the paper's.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/options.h"
#include "paper/workloads/dropout_memory.h"
#include "paper/workloads/hessian.h"
#include "paper/workloads/jit_pass.h"
#include "paper/workloads/timing.h"
#include "paper/workloads/tiny_graph.h"
#include "paper/workloads/unrolled_loop.h"

namespace fs = std::filesystem;

namespace ag::paper {
namespace {

// ------------------------------------------------------------------------------------------------
// Configuration and small utilities.

struct Config {
  bool quick = false;
  bool peers = true;
  bool callgrind = true;
  bool plots = true;
  std::string only;  // run just this seed's workloads ("000", "001", "002", "003"); for development
  fs::path out;
};

struct Figure {
  std::string workload, variant, metric;
  double value = 0;
  std::string unit, device;
};

std::string format(double v, int precision = 3) {
  if (std::isnan(v)) return "n/a";
  std::ostringstream s;
  const double a = std::fabs(v);
  if (a != 0 && (a >= 1e6 || a < 1e-3)) {
    s << std::setprecision(precision) << v;
  } else if (a >= 100 || v == std::floor(v)) {
    s << std::fixed << std::setprecision(a >= 1000 || v == std::floor(v) ? 0 : 1) << v;
  } else {
    s << std::setprecision(precision) << v;
  }
  return s.str();
}

std::string with_unit(double v, const std::string& unit) {
  if (std::isnan(v)) return "n/a";
  return format(v) + (unit.empty() ? "" : " " + unit);
}

std::string run_command(const std::string& command, int* status) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    *status = -1;
    return output;
  }
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  const int rc = pclose(pipe);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return output;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string cpu_device() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  return "cpu: " + model + ", " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " cores";
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one.empty() ? "unknown" : one;
}

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

const char* build_mode() {
#if defined(__OPTIMIZE__) && defined(NDEBUG)
  return "optimized (-c opt)";
#else
  return "NOT optimized (build with -c opt for real figures)";
#endif
}

// Finds a runfile of this binary: relative to the working directory (bazel run / bazel test run
// in the runfiles tree), else next to the binary, else in the source tree.
fs::path locate(const std::string& relative, const char* argv0) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates = {
      fs::path(relative), fs::path(std::string(argv0) + ".runfiles/autograd") / relative,
      fs::path(self.string() + ".runfiles/autograd") / relative,
      self.parent_path() / fs::path(relative).filename()};
  if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY"))
    candidates.push_back(fs::path(ws) / relative);
  for (const fs::path& p : candidates) {
    if (fs::exists(p, ec)) return fs::absolute(p);
  }
  return {};
}

// ------------------------------------------------------------------------------------------------
// Figures of this run.

class Results {
 public:
  explicit Results(std::string device) : device_(std::move(device)) {}

  void add(const std::string& workload, const std::string& variant, const std::string& metric,
           double value, const std::string& unit) {
    figures_.push_back({workload, variant, metric, value, unit, device_});
  }
  void add_peer(const std::string& workload, const Figure& f) {
    figures_.push_back({workload, f.variant, f.metric, f.value, f.unit, device_});
  }
  double get(const std::string& workload, const std::string& variant,
             const std::string& metric) const {
    for (const Figure& f : figures_) {
      if (f.workload == workload && f.variant == variant && f.metric == metric) return f.value;
    }
    return std::nan("");
  }
  const std::vector<Figure>& figures() const { return figures_; }

  void write_tsv(const fs::path& path) const {
    std::ofstream out(path);
    out << "workload\tvariant\tmetric\tvalue\tunit\tdevice\n";
    for (const Figure& f : figures_) {
      out << f.workload << '\t' << f.variant << '\t' << f.metric << '\t' << std::setprecision(6)
          << f.value << '\t' << f.unit << '\t' << f.device << '\n';
    }
  }

 private:
  std::string device_;
  std::vector<Figure> figures_;
};

// ------------------------------------------------------------------------------------------------
// Peers: PyTorch running the same workloads (paper/peers/*.py).

struct PeerRun {
  bool ok = false;
  std::string name;    // "PyTorch 1.13.0a0 (Debian python3-torch 1.13.1+dfsg-4), ..."
  std::string reason;  // why there are no figures
  std::vector<Figure> figures;

  double get(const std::string& metric) const {
    for (const Figure& f : figures) {
      if (f.metric == metric) return f.value;
    }
    return std::nan("");
  }
};

class Peers {
 public:
  Peers(const Config& config, const char* argv0) : config_(config), argv0_(argv0) {
    if (!config.peers) {
      status_ = "peers skipped (--no-peers)";
      return;
    }
    std::vector<std::string> pythons;
    if (const char* p = std::getenv("AG_PEER_PYTHON")) pythons.push_back(p);
    pythons.push_back("/usr/bin/python3");
    pythons.push_back("python3");
    for (const std::string& py : pythons) {
      int status = 0;
      run_command(quote(py) + " -c 'import torch' >/dev/null 2>&1", &status);
      if (status == 0) {
        python_ = py;
        break;
      }
    }
    status_ = python_.empty() ? "PyTorch not installed (no python3 here imports torch; "
                                "tools/setup.sh --peers installs it)"
                              : "";
  }

  bool available() const { return !python_.empty(); }
  const std::string& status() const { return status_; }

  PeerRun run(const std::string& script) const {
    PeerRun run;
    if (!available()) {
      run.reason = status_;
      return run;
    }
    const fs::path path = locate("paper/peers/" + script, argv0_);
    if (path.empty()) {
      run.reason = "peer script paper/peers/" + script + " not found";
      return run;
    }
    int status = 0;
    const std::string out = run_command(
        quote(python_) + " " + quote(path.string()) + (config_.quick ? " --quick" : "") + " 2>&1",
        &status);
    std::istringstream lines(out);
    std::string line, last_other;
    while (std::getline(lines, line)) {
      std::vector<std::string> cols;
      std::istringstream fields(line);
      std::string col;
      while (std::getline(fields, col, '\t')) cols.push_back(col);
      if (cols.size() == 2 && cols[0] == "peer") {
        run.name = cols[1];
      } else if (cols.size() == 2 && cols[0] == "unavailable") {
        run.reason = cols[1];
      } else if (cols.size() == 5 && cols[0] == "figure") {
        run.figures.push_back({"", cols[1], cols[2], std::atof(cols[3].c_str()), cols[4], ""});
      } else if (!line.empty()) {
        last_other = line;
      }
    }
    run.ok = status == 0 && !run.figures.empty();
    if (!run.ok && run.reason.empty()) {
      run.reason = "peer failed (exit " + std::to_string(status) + "): " + last_other;
    }
    return run;
  }

 private:
  const Config& config_;
  const char* argv0_;
  std::string python_;
  std::string status_;
};

// A cell for a peer figure: its value, or why there is none.
std::string peer_cell(const PeerRun& peer, const std::string& metric, const std::string& unit) {
  if (!peer.ok) return "not installed";
  return with_unit(peer.get(metric), unit);
}

std::string peer_line(const PeerRun& peer) {
  return peer.ok ? "PyTorch on this machine: " + peer.name + ", measured in this run."
                 : "PyTorch on this machine: " + peer.reason +
                       "; the tables show the published "
                       "figures alone.";
}

// ------------------------------------------------------------------------------------------------
// Markdown.

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  std::string str() const {
    std::ostringstream s;
    auto line = [&](const std::vector<std::string>& cells) {
      s << "|";
      for (const std::string& c : cells) s << " " << c << " |";
      s << "\n";
    };
    line(header_);
    s << "|";
    for (size_t i = 0; i < header_.size(); ++i) s << (i == 0 ? " --- |" : " ---: |");
    s << "\n";
    for (const auto& r : rows_) line(r);
    return s.str();
  }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

struct Report {
  std::string file, title;
  std::ostringstream body;
};

std::string header_block(const Config& config, const std::string& device) {
  std::ostringstream s;
  s << "Generated by `bazel run -c opt //paper:reproduce" << (config.quick ? " -- --quick" : "")
    << "` on " << today() << ". Machine: " << device << "; build: " << build_mode()
    << "; load average at the end: " << load_average()
    << " (other processes on the machine slow every variant alike; compare ratios)."
    << (config.quick ? " **Quick run: a small version of each workload; not the paper's figures.**"
                     : "")
    << "\n\n";
  return s.str();
}

void progress(int index, int total, const std::string& what) {
  std::cout << "[reproduce " << index << "/" << total << "] " << what << std::endl;
}

EngineOptions pruning(bool topo, bool reach) {
  EngineOptions o;
  o.prune_by_topo_nr = topo;
  o.prune_by_reachability = reach;
  return o;
}

// ------------------------------------------------------------------------------------------------
// Seed 000: unrolled loop, tiny graph, scalar chain.

void seed_000(const Config& config, const Peers& peers, Results& results, Report& report,
              const char* argv0) {
  // Unrolled loop.
  progress(1, 6, "unrolled loop (seed 000): pruning off / on / topo_nr only / reachability only");
  UnrolledLoopConfig uc;
  if (config.quick) uc.steps = 200;
  // The variants with a pruning cut take ~0.1 s per run, the others ~10 s: the cheap ones get more
  // repetitions (every repetition interleaves all variants that still have repetitions to do).
  const int reps = config.quick ? 1 : 3, cheap_reps = config.quick ? 1 : 9;
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
  std::vector<std::vector<std::vector<double>>> blocks(variants.size());  // [variant][rep][block]
  std::vector<long long> discovered(variants.size());
  auto reps_of = [&](size_t v) { return variants[v].second.prune_by_topo_nr ? cheap_reps : reps; };
  for (int r = 0; r < cheap_reps; ++r) {
    for (size_t v = 0; v < variants.size(); ++v) {
      if (r >= reps_of(v)) continue;
      UnrolledLoopRun run = run_unrolled_loop(uc, variants[v].second);
      blocks[v].push_back(run.block_seconds);
      discovered[v] = run.nodes_expanded;
    }
  }
  const std::string wl = "unrolled_loop";
  const int nblocks = uc.steps / uc.block;
  for (size_t v = 0; v < variants.size(); ++v) {
    std::vector<double> med(nblocks);
    for (int b = 0; b < nblocks; ++b) {
      std::vector<double> samples;
      for (int r = 0; r < reps_of(v); ++r) samples.push_back(blocks[v][r][b]);
      med[b] = median(samples);
      results.add(wl, variants[v].first,
                  "time per 100 steps@step=" + std::to_string((b + 1) * uc.block), med[b] * 1e3,
                  "ms");
    }
    results.add(wl, variants[v].first, "first block", med.front() * 1e3, "ms");
    results.add(wl, variants[v].first, "last block", med.back() * 1e3, "ms");
    results.add(wl, variants[v].first, "last/first block", med.back() / med.front(), "x");
    // A least-squares line through all blocks: growth over the run, robust to one noisy block.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int b = 0; b < nblocks; ++b) {
      sx += b;
      sy += med[b];
      sxx += double(b) * b;
      sxy += b * med[b];
    }
    const double slope = nblocks > 1 ? (nblocks * sxy - sx * sy) / (nblocks * sxx - sx * sx) : 0;
    const double intercept = (sy - slope * sx) / nblocks;
    if (intercept > 0) {
      results.add(wl, variants[v].first, "fitted last/first block",
                  (intercept + slope * (nblocks - 1)) / intercept, "x");
    }
    results.add(wl, variants[v].first, "nodes discovered", static_cast<double>(discovered[v]),
                "nodes");
  }
  std::cout << "  pruning on: first " << format(results.get(wl, "pruning on", "first block"))
            << " ms, last " << format(results.get(wl, "pruning on", "last block"))
            << " ms; pruning off: first " << format(results.get(wl, "pruning off", "first block"))
            << " ms, last " << format(results.get(wl, "pruning off", "last block")) << " ms"
            << std::endl;
  std::cout << "  peer: PyTorch unrolled loop" << std::endl;
  PeerRun peer_loop = peers.run("unrolled_loop.py");
  for (const Figure& f : peer_loop.figures) results.add_peer(wl, f);

  // Tiny graph and scalar chain.
  progress(2, 6, "tiny graph grad(a*b, {a, b}) and scalar chain (seed 000, issue 2)");
  const int tiny_iters = config.quick ? 2000 : 20000, tiny_reps = config.quick ? 3 : 15;
  const int chain_iters = config.quick ? 5 : 100, chain_reps = config.quick ? 3 : 11;
  const ScalarChainInputs chain = make_scalar_chain_inputs(1000);
  time_tiny_graph_us(EngineOptions(), tiny_iters);  // warm-up
  time_scalar_chain_ms(chain, EngineOptions(), chain_iters);
  const std::vector<double> tiny = interleaved_medians(
      tiny_reps, {[&] { return time_tiny_graph_us(pruning(false, false), tiny_iters); },
                  [&] { return time_tiny_graph_us(pruning(true, true), tiny_iters); }});
  const std::vector<double> chain_ms = interleaved_medians(
      chain_reps, {[&] { return time_scalar_chain_ms(chain, pruning(false, false), chain_iters); },
                   [&] { return time_scalar_chain_ms(chain, pruning(true, true), chain_iters); }});
  results.add("tiny_graph", "pruning off", "time per call", tiny[0], "us");
  results.add("tiny_graph", "pruning on", "time per call", tiny[1], "us");
  results.add("scalar_chain", "pruning off", "time per call", chain_ms[0], "ms");
  results.add("scalar_chain", "pruning on", "time per call", chain_ms[1], "ms");

  // Instruction counts (callgrind), as the seed reports them.
  std::string callgrind_status;
  const int cg_calls = config.quick ? 20 : 100;
  double instr[2] = {std::nan(""), std::nan("")};
  int status = 0;
  run_command("valgrind --version >/dev/null 2>&1", &status);
  const fs::path cg_binary = locate("paper/tiny_graph_callgrind", argv0);
  if (!config.callgrind) {
    callgrind_status = "skipped (--no-callgrind)";
  } else if (status != 0) {
    callgrind_status = "valgrind not installed";
  } else if (cg_binary.empty()) {
    callgrind_status = "paper/tiny_graph_callgrind not found";
  } else {
    for (int p = 0; p < 2; ++p) {
      const std::string out = run_command(
          "valgrind --tool=callgrind --callgrind-out-file=/dev/null --collect-atstart=no "
          "'--toggle-collect=*measured_calls*' " +
              quote(cg_binary.string()) + " " + std::to_string(cg_calls) + " " + std::to_string(p) +
              " 2>&1",
          &status);
      const size_t at = out.find("Collected :");
      if (status == 0 && at != std::string::npos) {
        instr[p] = std::atof(out.c_str() + at + 11) / cg_calls;
      } else if (out.find("AVX-512") != std::string::npos ||
                 out.find("unhandled instruction") != std::string::npos) {
        // Valgrind does not emulate AVX-512, which -c opt builds use on this machine kind.
        callgrind_status =
            "not measured: valgrind cannot run AVX-512 code (rerun with --define=ag_isa=avx2)";
      } else {
        callgrind_status = "callgrind failed";
      }
    }
    if (!std::isnan(instr[0])) {
      results.add("tiny_graph", "pruning off", "instructions per call", instr[0], "instr");
      results.add("tiny_graph", "pruning on", "instructions per call", instr[1], "instr");
    }
  }
  std::cout << "  tiny graph: " << format(tiny[0]) << " us (off), " << format(tiny[1])
            << " us (on); scalar chain: " << format(chain_ms[0]) << " ms (off), "
            << format(chain_ms[1]) << " ms (on)"
            << (std::isnan(instr[1]) ? "; instructions: " + callgrind_status
                                     : "; " + format(instr[1]) + " instructions per call (on)")
            << std::endl;
  std::cout << "  peer: PyTorch tiny graph and scalar chain" << std::endl;
  PeerRun peer_tiny = peers.run("tiny_graph.py");
  for (const Figure& f : peer_tiny.figures) {
    results.add_peer(f.metric.rfind("scalar chain", 0) == 0 ? "scalar_chain" : "tiny_graph", f);
  }

  // Report.
  report.file = "seed_000_topological_nr.md";
  report.title = "Seed 000: topological number and discovery pruning (PR 52180, issue 12635)";
  std::ostringstream& s = report.body;
  s << "The published figures were taken with the PR's own scripts on the author's machine "
       "(PyTorch master of March 2021, CPU; the thread names no hardware).\n\n";
  s << peer_line(peer_loop) << "\n\n";
  s << "### Unrolled loop: differentiable SGD, time per 100 steps\n\n"
    << "Linear classifier 32x3 + bias 3, batch " << uc.batch << ", cross entropy, grad(create_graph"
    << "=true) w.r.t. the current parameters, " << uc.steps << " steps; per block, the median of "
    << cheap_reps << " runs with a pruning cut and " << reps
    << " without (interleaved), after a warm-up run. Pruning = the topological-number cut and the "
       "reachability-signature cut (both are ours to switch; PyTorch has only the first).\n\n";
  Table t({"figure", "pruning off", "pruning on", "topo_nr only", "reachability only",
           "PyTorch here", "published before", "published after"});
  auto loop_row = [&](const std::string& label, const std::string& metric, const std::string& unit,
                      const std::string& peer_metric, const std::string& before,
                      const std::string& after) {
    std::vector<std::string> r = {label};
    for (const auto& v : variants) r.push_back(with_unit(results.get(wl, v.first, metric), unit));
    r.push_back(peer_cell(peer_loop, peer_metric, unit));
    r.push_back(before);
    r.push_back(after);
    t.row(r);
  };
  const std::string last_step = std::to_string(uc.steps);
  loop_row("steps 1-100", "first block", "ms", "time per 100 steps@step=100",
           "470 ms (incl. warm-up); steps 101-200: 64 ms", "490 ms (incl. warm-up); 31 ms");
  if (nblocks > 2) {
    const std::string mid = std::to_string((nblocks / 2) * uc.block);
    loop_row("steps " + std::to_string((nblocks / 2 - 1) * uc.block + 1) + "-" + mid,
             "time per 100 steps@step=" + mid, "ms", "time per 100 steps@step=" + mid,
             "steps 901-1000: 240 ms", "31 ms");
  }
  loop_row("steps " + std::to_string(uc.steps - uc.block + 1) + "-" + last_step, "last block", "ms",
           "time per 100 steps@step=" + last_step, "steps 1901-2000: 500 ms", "32 ms");
  loop_row("last / first block", "last/first block", "x", "last/first block", "7.8x (2000 vs 200)",
           "1.03x (2000 vs 200)");
  loop_row("last / first, least-squares line through all blocks", "fitted last/first block", "x",
           "fitted last/first block", "", "");
  {
    std::vector<std::string> r = {"nodes visited by discovery (whole run)"};
    for (const auto& v : variants)
      r.push_back(format(results.get(wl, v.first, "nodes discovered")));
    r.insert(r.end(), {"", "", ""});
    t.row(r);
  }
  s << t.str() << "\n";
  if (config.plots) s << "![time per 100 steps](unrolled_loop.png)\n\n";

  s << "### Tiny graph: grad(a*b, {a, b}) on 2x2 float32 (no regression)\n\n"
    << "Forward included, as in the seed's `Timer(\"torch.autograd.grad(a*b, [a, b], "
       "gradient)\")`; "
    << "median of " << tiny_reps << " interleaved repetitions of " << tiny_iters
    << " calls. Instructions: callgrind over " << cg_calls
    << " calls of the same workload (paper/tiny_graph_callgrind), per call.\n\n";
  Table tt({"figure", "pruning off", "pruning on", "on / off", "PyTorch here (Python)",
            "PyTorch 1.13.1 C++ (issue 2 anchor)", "published before", "published after"});
  tt.row({"time per call", with_unit(tiny[0], "us"), with_unit(tiny[1], "us"),
          format(tiny[1] / tiny[0]) + "x", peer_cell(peer_tiny, "time per call", "us"), "9.4 us",
          "12.74 us", "13.12 us"});
  tt.row({"instructions per call",
          std::isnan(instr[0]) ? callgrind_status : with_unit(instr[0], "instr"),
          std::isnan(instr[1]) ? callgrind_status : with_unit(instr[1], "instr"),
          std::isnan(instr[1]) ? "n/a" : format(instr[1] / instr[0]) + "x", "not measured", "",
          "80,790 instr", "80,918 instr"});
  s << tt.str() << "\n";
  s << "### Scalar chain: grad(y.sum(), {x}), y = x * s repeated 1000 times, x of 4 elements\n\n"
    << "Forward included; median of " << chain_reps << " interleaved repetitions of " << chain_iters
    << " calls.\n\n";
  Table tc({"figure", "pruning off", "pruning on", "PyTorch here (Python)",
            "PyTorch 1.13.1 C++ (issue 2 anchor)", "anchor / ours (on)"});
  tc.row({"time per call", with_unit(chain_ms[0], "ms"), with_unit(chain_ms[1], "ms"),
          peer_cell(peer_tiny, "scalar chain time per call", "ms"), "7.4 ms",
          format(7.4 / chain_ms[1]) + "x"});
  s << tc.str() << "\n";
  s << "Issue 2 targets (at least 5x below the C++ anchors): tiny graph <= 2 us (ours: "
    << format(tiny[1]) << " us, " << format(9.4 / tiny[1]) << "x below 9.4 us); scalar chain "
    << "<= 1.5 ms (ours: " << format(chain_ms[1]) << " ms, " << format(7.4 / chain_ms[1])
    << "x below 7.4 ms).\n";
}

// ------------------------------------------------------------------------------------------------
// Seed 001 (and the peak-memory half of seed 003): the hessian step.

struct HessianFigures {
  std::map<std::string, int64_t> peak[2];  // [final_backward][variant]
};

HessianFigures seed_001(const Config& config, const Peers& peers, Results& results, Report& report,
                        const fs::path& source_results) {
  progress(3, 6,
           "hessian (seed 001): per-call needs_input_grad off / on, ReLU and Tanh, without "
           "and with the final backward");
  HessianConfig hc;
  if (config.quick) {
    hc.batch = 100;
    hc.hidden = 64;
  }
  const int reps = config.quick ? 2 : 15;
  const Tensor x = make_hessian_input(hc);
  EngineOptions off;
  off.per_call_needs_input_grad = false;
  const EngineOptions on;
  const Activation activations[2] = {Activation::kRelu, Activation::kTanh};
  double ms[2][2][2];          // [activation][final_backward][off, on]
  int64_t weight_mm[2][2][2];  // weight-gradient matmuls per step
  int64_t formulas[2][2][2];
  Mlp tanh_mlp;
  for (int a = 0; a < 2; ++a) {
    hc.activation = activations[a];
    const Mlp mlp = make_mlp(hc);
    if (a == 1) tanh_mlp = mlp;
    const std::string wl = std::string("hessian_") + (a ? "tanh" : "relu");
    for (int fb = 0; fb < 2; ++fb) {
      measure_hessian_step(mlp, x, fb, on);  // warm-up
      std::vector<HessianStepStats> last(2);
      const std::vector<double> med =
          interleaved_medians(reps, {[&] {
                                       last[0] = measure_hessian_step(mlp, x, fb, off);
                                       return last[0].seconds * 1e3;
                                     },
                                     [&] {
                                       last[1] = measure_hessian_step(mlp, x, fb, on);
                                       return last[1].seconds * 1e3;
                                     }});
      const std::string suffix = fb ? ", with final backward" : ", no final backward";
      for (int v = 0; v < 2; ++v) {
        ms[a][fb][v] = med[v];
        weight_mm[a][fb][v] = last[v].weight_grad_matmuls;
        formulas[a][fb][v] = last[v].formulas_evaluated;
        const std::string variant = v ? "per-call on" : "per-call off";
        results.add(wl, variant, "step time" + suffix, med[v], "ms");
        results.add(wl, variant, "weight-gradient matmuls" + suffix,
                    static_cast<double>(weight_mm[a][fb][v]), "matmuls");
        results.add(wl, variant, "derivative formulas" + suffix,
                    static_cast<double>(formulas[a][fb][v]), "formulas");
      }
      results.add(wl, "off / on", "speed-up" + suffix, med[0] / med[1], "x");
      std::cout << "  " << activation_name(activations[a]) << ", " << (fb ? "with" : "without")
                << " final backward: off " << format(med[0]) << " ms, on " << format(med[1])
                << " ms (" << format(med[0] / med[1]) << "x)" << std::endl;
    }
  }

  // Why the ratio lands where it does: the layer's product shapes timed alone.
  const LayerProductTimes products = measure_layer_products(hc, config.quick ? 2 : 31);
  results.add("hessian_products", "forward h @ W^T", "time", products.forward * 1e3, "ms");
  results.add("hessian_products", "input gradient g @ W", "time", products.input_grad * 1e3, "ms");
  results.add("hessian_products", "weight gradient g^T @ h", "time", products.weight_grad * 1e3,
              "ms");
  results.add("hessian_products", "products only", "off / on bound", products.products_only_bound(),
              "x");

  // Peak bytes of the step (seed 003's concern), per option set; deterministic, one run each.
  // Tanh: the workload whose every phase does work (see paper/workloads/hessian.h).
  HessianFigures hf;
  const std::vector<std::pair<std::string, EngineOptions>> mem_variants = [] {
    EngineOptions guard_off, per_call_off;
    guard_off.guard_saves = false;
    per_call_off.per_call_needs_input_grad = false;
    return std::vector<std::pair<std::string, EngineOptions>>{
        {"all on", EngineOptions()},
        {"guard_saves off", guard_off},
        {"per-call off", per_call_off},
        {"all off", EngineOptions::all_off()}};
  }();
  for (int fb = 0; fb < 2; ++fb) {
    for (const auto& [name, options] : mem_variants) {
      const int64_t peak = measure_hessian_step(tanh_mlp, x, fb, options).peak_bytes;
      hf.peak[fb][name] = peak;
      results.add(
          "hessian_memory", name,
          std::string("peak bytes") + (fb ? ", with final backward" : ", no final backward"),
          static_cast<double>(peak), "B");
    }
  }

  std::cout << "  peer: PyTorch hessian" << std::endl;
  PeerRun peer = peers.run("hessian.py");
  for (const Figure& f : peer.figures) {
    results.add_peer(f.metric.rfind("Tanh", 0) == 0 ? "hessian_tanh" : "hessian_relu", f);
  }

  report.file = "seed_001_needs_input_grad.md";
  report.title = "Seed 001: per-call needs_input_grad (issue 56500, PR 82544)";
  std::ostringstream& s = report.body;
  s << "Published: PR 82544's hessian benchmark on an NVIDIA A100, FP32, batch 10000. Ours: "
    << "CPU, float32, batch " << hc.batch << ", hidden width " << hc.hidden << "; median of "
    << reps << " interleaved off/on steps (forward included).\n\n";
  s << peer_line(peer) << "\n\n";
  s << "MLP: input 16, 6 hidden Linear+activation layers, output 1; y_x = grad(y, x, "
       "GradArgs().grad_outputs("
       "create_graph)), y_xx = grad(y_x, x, GradArgs().grad_outputs(create_graph)), optionally "
       "y_xx.sum().backward() to the "
       "weights.\n\n"
       "**ReLU** (the published workload): as in PyTorch, relu's derivative is threshold_backward, "
       "differentiable with a zero derivative w.r.t. relu's output, so y_xx is zero but computed "
       "through the graph (matmuls included) and the final backward reaches the weights: both "
       "engines do the same work. **Tanh** is the same MLP with a smooth activation, whose "
       "second-order terms are not zero.\n\n";
  Table t({"workload", "per-call off", "per-call on", "off / on", "PyTorch here",
           "PyTorch 1.13.1 OpenBLAS (issue 4 anchor)", "published before (A100)",
           "published after (A100)", "published off / on"});
  const char* names[2] = {"ReLU", "Tanh"};
  for (int a = 0; a < 2; ++a) {
    for (int fb = 0; fb < 2; ++fb) {
      const std::string label =
          std::string(names[a]) + (fb ? ", with final backward" : ", no final backward");
      const std::string peer_metric = std::string(names[a]) + " step time" +
                                      (fb ? ", with final backward" : ", no final backward");
      const bool anchor = a == 0;
      t.row({label, with_unit(ms[a][fb][0], "ms"), with_unit(ms[a][fb][1], "ms"),
             format(ms[a][fb][0] / ms[a][fb][1]) + "x", peer_cell(peer, peer_metric, "ms"),
             anchor ? (fb ? "66 ms" : "33 ms") : "", anchor ? (fb ? "81.173 ms" : "55.658 ms") : "",
             anchor ? (fb ? "54.917 ms" : "29.392 ms") : "",
             anchor ? (fb ? "1.47x" : "1.90x") : ""});
    }
  }
  s << t.str() << "\n";
  Table c({"work per step (engine counters)", "per-call off", "per-call on"});
  for (int a = 0; a < 2; ++a) {
    for (int fb = 0; fb < 2; ++fb) {
      const std::string label =
          std::string(names[a]) + (fb ? ", with final backward" : ", no final backward");
      c.row({"weight-gradient matmuls, " + label, format(weight_mm[a][fb][0]),
             format(weight_mm[a][fb][1])});
      c.row({"derivative formulas evaluated, " + label, format(formulas[a][fb][0]),
             format(formulas[a][fb][1])});
    }
  }
  s << c.str() << "\n";
  s << "Where the ReLU ratio comes from: per hidden layer the step runs 4 products of the kinds "
       "below with per-call needs on, and 3 weight gradients more with it off (the first grad's, "
       "and the second grad's two). Timed alone (median of interleaved runs), they bound the "
       "off/on ratio at (4 kept + 3 weight) / (4 kept) when products are all the step does; the "
       "rest of the step (relu masks, fills, the thread pool) is the same in both variants and "
       "pulls the measured ratio below that bound.\n\n";
  Table p(
      {"product (batch " + std::to_string(hc.batch) + ", width " + std::to_string(hc.hidden) + ")",
       "time"});
  p.row({"forward h @ W^T (both variants)", with_unit(products.forward * 1e3, "ms")});
  p.row({"input gradient g @ W (both variants)", with_unit(products.input_grad * 1e3, "ms")});
  p.row(
      {"weight gradient g^T @ h (per-call off only)", with_unit(products.weight_grad * 1e3, "ms")});
  p.row({"off / on bound from products alone", format(products.products_only_bound()) + "x"});
  s << p.str() << "\n";

  // CUDA rows measured elsewhere and saved (dated, device named): paper/results/cuda/*.tsv with
  // columns date, device, workload, variant, metric, value, unit.
  s << "### CUDA\n\n";
  std::vector<std::vector<std::string>> cuda_rows;
  std::error_code ec;
  const fs::path cuda_dir = source_results / "cuda";
  if (fs::is_directory(cuda_dir, ec)) {
    for (const auto& entry : fs::directory_iterator(cuda_dir, ec)) {
      if (entry.path().extension() != ".tsv") continue;
      std::ifstream in(entry.path());
      std::string line;
      while (std::getline(in, line)) {
        std::vector<std::string> cols;
        std::istringstream fields(line);
        std::string col;
        while (std::getline(fields, col, '\t')) cols.push_back(col);
        if (cols.size() == 7 && cols[0] != "date" && cols[2].rfind("hessian", 0) == 0)
          cuda_rows.push_back(cols);
      }
    }
  }
  if (cuda_rows.empty()) {
    s << "No saved CUDA results (paper/results/cuda/*.tsv): this machine has no GPU; the rows "
         "appear here once a GPU run has saved them.\n";
  } else {
    Table cu({"date", "device", "workload", "variant", "metric", "value"});
    for (const auto& r : cuda_rows) cu.row({r[0], r[1], r[2], r[3], r[4], r[5] + " " + r[6]});
    s << "Saved from earlier runs on a GPU machine (not measured now):\n\n" << cu.str();
  }
  return hf;
}

// ------------------------------------------------------------------------------------------------
// Seed 003: Dropout2d memory, and the hessian step's peak bytes.

void seed_003(const Config& config, const Peers& peers, Results& results, Report& report,
              const HessianFigures& hf) {
  progress(4, 6, "Dropout2d memory (seed 003): guard_saves off / on");
  EngineOptions off;
  off.guard_saves = false;
  const EngineOptions on;
  const DropoutMemory mask[2] = {measure_dropout_memory(off), measure_dropout_memory(on)};
  const DropoutMemory op[2] = {measure_dropout2d_op_memory(off), measure_dropout2d_op_memory(on)};
  for (int v = 0; v < 2; ++v) {
    const std::string variant = v ? "guard_saves on" : "guard_saves off";
    results.add("dropout_memory", variant, "extra live bytes", mask[v].extra_live_bytes, "B");
    results.add("dropout_memory", variant, "bytes saved for backward", mask[v].bytes_saved, "B");
    results.add("dropout2d_op_memory", variant, "extra live bytes", op[v].extra_live_bytes, "B");
    results.add("dropout2d_op_memory", variant, "bytes saved for backward", op[v].bytes_saved, "B");
  }
  std::cout << "  ((x+2)*m).sum(): extra live bytes " << mask[0].extra_live_bytes << " (off), "
            << mask[1].extra_live_bytes << " (on)" << std::endl;
  std::cout << "  peer: PyTorch saved bytes" << std::endl;
  PeerRun peer = peers.run("dropout_memory.py");
  for (const Figure& f : peer.figures) results.add_peer("dropout_memory", f);

  report.file = "seed_003_guarded_saves.md";
  report.title = "Seed 003: guarded saved inputs (PR 16583, issue 16577)";
  std::ostringstream& s = report.body;
  s << "Published: PR 16583's test `test_free_unneeded_tensor` (CUDA memory statistics; the "
       "thread names no GPU) asserts that `((x + 2) * m).sum()` leaves as many bytes allocated as "
       "`x.sum()`. Ours: the CPU allocator's exact live-byte count, no GPU needed. "
    << peer_line(peer) << " PyTorch has no CPU allocator statistics, so its column counts the "
    << "bytes autograd saves for backward (saved-tensor hooks).\n\n";
  s << "x [2,3,10,10] requires grad, m [1,3,1,1] does not. base = live bytes after z = x.sum(); "
       "end = live bytes after z = ((x + 2) * m).sum().\n\n";
  Table t({"figure", "guard_saves off", "guard_saves on", "PyTorch here", "published (PR 16583)"});
  t.row({"extra live bytes (end - base)", with_unit(mask[0].extra_live_bytes, "B"),
         with_unit(mask[1].extra_live_bytes, "B"), "no CPU statistics", "0 (base_mem == end_mem)"});
  t.row({"bytes saved for backward", with_unit(mask[0].bytes_saved, "B"),
         with_unit(mask[1].bytes_saved, "B"), peer_cell(peer, "bytes saved for backward", "B"),
         "m only"});
  t.row({"same with ops::dropout2d(x + 2, p=0.5): extra live bytes",
         with_unit(op[0].extra_live_bytes, "B"), with_unit(op[1].extra_live_bytes, "B"), "", ""});
  s << t.str() << "\n";
  s << "### Peak bytes of the hessian step (seed 001's Tanh workload"
    << (config.quick ? ", quick size" : "")
    << ")\n\nAllocator peak during one step above the live bytes before it (model and input "
       "excluded). In this MLP every saved value is needed (every input of every op requires "
       "grad), so guard_saves changes nothing; the peak is reached while the forward, first- and "
       "second-grad graphs hold their saved activations, which per-call needs_input_grad does not "
       "change either: the weight gradients it skips are small, short-lived temporaries.\n\n";
  Table p({"option set", "no final backward", "with final backward"});
  for (const std::string name : {"all on", "guard_saves off", "per-call off", "all off"}) {
    p.row({name, with_unit(static_cast<double>(hf.peak[0].at(name)) / 1024, "KiB"),
           with_unit(static_cast<double>(hf.peak[1].at(name)) / 1024, "KiB")});
  }
  s << p.str();
}

// ------------------------------------------------------------------------------------------------
// Seed 002: create_autodiff_subgraphs, AliasDb rebuilt vs updated in place.

void seed_002(const Config& config, Results& results, Report& report) {
  progress(5, 6, "create_autodiff_subgraphs (seed 002): AliasDb rebuild vs incremental");
  const std::vector<size_t> sizes =
      config.quick ? std::vector<size_t>{100, 300, 1000}
                   : std::vector<size_t>{1000, 2000, 5000, 10000, 20000, 50000, 100000};
  const double rebuild_budget_s = config.quick ? 5 : 60;  // predicted time above which we skip
  Table t({"nodes", "rebuild", "incremental", "rebuild / incremental",
           "AliasDb constructions (rebuild / incremental)", "merges"});
  double last_rebuild_s = 0;
  size_t last_rebuild_n = 0;
  for (size_t n : sizes) {
    const JitPassRun inc = run_jit_pass(n, jit::AliasDbMode::kIncremental);
    results.add("create_autodiff_subgraphs", "incremental", "pass time@nodes=" + std::to_string(n),
                inc.seconds * 1e3, "ms");
    const double predicted =
        last_rebuild_n ? last_rebuild_s * std::pow(double(n) / double(last_rebuild_n), 2) : 0;
    std::optional<JitPassRun> reb;
    if (predicted <= rebuild_budget_s) {
      reb = run_jit_pass(n, jit::AliasDbMode::kRebuild);
      last_rebuild_s = reb->seconds;
      last_rebuild_n = n;
      results.add("create_autodiff_subgraphs", "rebuild", "pass time@nodes=" + std::to_string(n),
                  reb->seconds * 1e3, "ms");
    }
    std::cout << "  " << n << " nodes: incremental " << format(inc.seconds * 1e3) << " ms, rebuild "
              << (reb ? format(reb->seconds * 1e3) + " ms"
                      : "skipped (predicted " + format(predicted) + " s)")
              << std::endl;
    t.row({std::to_string(inc.nodes),
           reb ? with_unit(reb->seconds * 1e3, "ms")
               : "skipped (predicted " + format(predicted) + " s)",
           with_unit(inc.seconds * 1e3, "ms"), reb ? format(reb->seconds / inc.seconds) + "x" : "",
           (reb ? std::to_string(reb->alias_db_constructions) : std::string("-")) + " / " +
               std::to_string(inc.alias_db_constructions),
           std::to_string(inc.merges)});
  }
  report.file = "seed_002_alias_db.md";
  report.title = "Seed 002: AliasDb updated in place by create_autodiff_subgraphs (PR 42141)";
  std::ostringstream& s = report.body;
  s << "Published: the PR reports no timings; it states the change from O(n^2) (a fresh AliasDb "
       "after every merge) to updating the AliasDb in place, with identical results. Ours: "
       "engine/jit's pass on engine/jit's synthetic layered graph (views, in-place adds, prints, "
       "list wildcards) in both modes; the property tests check both modes give the same "
       "partition. PyTorch: not measured (its pass is internal to TorchScript and has only the "
       "in-place mode since 2020).\n\n";
  s << t.str() << "\n";
  if (config.plots) s << "![pass time vs graph size](jit_pass.png)\n";
}

// ------------------------------------------------------------------------------------------------

bool same_path(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec);
}

// Replaces the text between the BEGIN/END GENERATED RESULTS markers of `path`.
void update_generated_section(const fs::path& path, const std::string& text) {
  std::ifstream in(path);
  if (!in) return;
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string doc = buffer.str();
  const std::string begin = "<!-- BEGIN GENERATED RESULTS -->\n",
                    end = "<!-- END GENERATED RESULTS -->";
  const size_t b = doc.find(begin), e = doc.find(end);
  if (b == std::string::npos || e == std::string::npos || e < b) return;
  doc.replace(b + begin.size(), e - b - begin.size(), text);
  std::ofstream(path) << doc;
  std::cout << "updated the generated results in " << path << std::endl;
}

int reproduce(const Config& config, const char* argv0) {
  const std::string device = cpu_device();
  std::cout << "reproduce: " << (config.quick ? "quick run" : "full run") << "; machine: " << device
            << "; build: " << build_mode() << "; writing to " << config.out << std::endl;
  fs::create_directories(config.out);
  fs::path source_results = config.out;
  if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
    source_results = fs::path(ws) / "paper" / "results";
  }
  const Peers peers(config, argv0);
  std::cout << "peers: " << (peers.available() ? "PyTorch importable" : peers.status())
            << std::endl;

  Results results(device);
  std::vector<Report> reports(4);
  auto wanted = [&](const char* seed) { return config.only.empty() || config.only == seed; };
  if (wanted("000")) seed_000(config, peers, results, reports[0], argv0);
  HessianFigures hf;
  if (wanted("001") || wanted("003")) {
    hf = seed_001(config, peers, results, reports[1], source_results);
  }
  if (wanted("003")) seed_003(config, peers, results, reports[3], hf);
  if (wanted("002")) seed_002(config, results, reports[2]);

  progress(6, 6, "writing results");
  results.write_tsv(config.out / "figures.tsv");
  const std::string header = header_block(config, device);
  for (const Report& r : reports) {
    if (r.file.empty()) continue;
    std::ofstream out(config.out / r.file);
    out << "## " << r.title << "\n\n" << header << r.body.str();
    std::cout << "\n## " << r.title << "\n\n" << r.body.str();
  }
  std::cout << std::endl;
  // A full run into the source tree also refreshes the generated section of paper/paper.md.
  if (!config.quick && config.only.empty() && std::getenv("BUILD_WORKSPACE_DIRECTORY") &&
      same_path(config.out, source_results)) {
    std::ostringstream section;
    section << header;
    for (const Report& r : reports) {
      section << "### " << r.title << "\n\n";
      std::istringstream body(r.body.str());
      std::string line;
      while (std::getline(body, line)) {
        if (line.rfind("![", 0) == 0) line.insert(line.find('(') + 1, "results/");
        section << (line.rfind("#", 0) == 0 ? "#" + line : line) << "\n";
      }
      section << "\n";
    }
    update_generated_section(source_results.parent_path() / "paper.md", section.str());
  }

  if (config.plots) {
    const fs::path script = locate("paper/plot.py", argv0);
    int status = 0;
    std::string out;
    if (script.empty()) {
      out = "paper/plot.py not found";
      status = 1;
    } else {
      out = run_command("/usr/bin/python3 " + quote(script.string()) + " " +
                            quote((config.out / "figures.tsv").string()) + " " +
                            quote(config.out.string()) + " 2>&1",
                        &status);
    }
    std::cout << "plots: " << (status == 0 ? out : "skipped: " + out) << std::endl;
  }
  std::cout << "reproduce: wrote " << results.figures().size() << " figures and " << reports.size()
            << " tables to " << config.out << std::endl;
  return 0;
}

}  // namespace
}  // namespace ag::paper

int main(int argc, char** argv) {
  ag::paper::Config config;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      config.quick = true;
    } else if (arg == "--no-peers") {
      config.peers = false;
    } else if (arg == "--no-callgrind") {
      config.callgrind = false;
    } else if (arg == "--no-plots") {
      config.plots = false;
    } else if (arg == "--only" && i + 1 < argc) {
      config.only = argv[++i];
    } else if (arg == "--out" && i + 1 < argc) {
      config.out = argv[++i];
    } else {
      std::cerr << "usage: reproduce [--quick] [--out DIR] [--no-peers] [--no-callgrind] "
                   "[--no-plots] [--only 000|001|002|003]\n";
      return 2;
    }
  }
  if (config.out.empty()) {
    const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
    config.out = ws ? fs::path(ws) / "paper" / "results" : fs::path("paper") / "results";
  }
  try {
    return ag::paper::reproduce(config, argv[0]);
  } catch (const std::exception& e) {
    std::cerr << "reproduce: error: " << e.what() << std::endl;
    return 1;
  }
}
