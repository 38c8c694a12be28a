// The fuzz driver: runs every registered property (or one) on fresh random graphs for as long as
// asked, in reproducible batches.
//
//   bazel run -c opt //proptests:fuzz -- [--seed S] [--iterations N | --seconds T]
//       [--property NAME] [--max-nodes K] [--batch B] [--list]
//   bazel run -c opt //proptests:fuzz -- --against pytorch [--seconds T]
//       conformance programs against a live PyTorch (proptests/conformance/fuzz_against.h)
//   --hooks (with --against): the programs get hook statements too (Note [Conformance hooks],
//       proptests/conformance/program.h)
//   --modes [--modes-every N] (with --against): every (N-th) program's functional core also runs
//       through PyTorch's modes (torch.autograd.grad, torch.func.vjp/jvp, forward_ad,
//       torch.compile(backend="aot_eager")), compared with each other (Note [PyTorch against
//       itself], proptests/conformance/mode_check.h); seconds per program (torch.compile);
//       --modes-jax: with JAX's vjp and jvp, jit off and on, as answers too (jax_runtime.py)
//   --findings DIR (with --against): every crashing program as it happens, and each crash
//       signature's reduced program and standalone script at the end (fuzz_against.h);
//       --no-reduce leaves the reductions to a later `--against E --reduce-crashes DIR/crashes.txt
//       [--reduce-crashes ...] --findings OUT`, which merges the logs of several campaigns.
//   --keep-going: a failing batch is reported (shrunk, with its replay command) and the
//       campaign goes on; the exit status says whether any batch failed.
//   --no-shrink: a failing case is reported as generated, unshrunk. For --against campaigns:
//       each shrinking step of a mismatch reruns PyTorch in a fresh process (seconds each), so
//       one systematic mismatch can hold a campaign for many minutes (seed 4701: stalled after
//       1,400 programs); the statement-dropping reduction after the failure still runs.
//
// Properties share the time equally. Batch i of property p runs B cases with RapidCheck seed
// hash(S, p, i), so a campaign is reproducible from S. On a failure the driver
// prints RapidCheck's shrunk counterexample (a readable graph) and the command that replays
// exactly that batch, then exits with status 1.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "proptests/conformance/fuzz_against.h"
#include "proptests/fuzz_stats.h"
#include "proptests/rapidcheck_runner.h"

namespace ag::proptests {
namespace {

struct Args {
  uint64_t seed = 1;
  int64_t iterations = 10000;
  double seconds = 0;  // > 0: run by time instead of by count
  std::string property;
  int max_nodes = 100;
  int batch = 100;
  int64_t batch_seed = -1;  // replay one batch
  bool list = false;
  std::string against;     // a foreign engine: run only the conformance property against it
  std::string findings;    // --against: where crashes and their reduced scripts go
  bool no_reduce = false;  // --against: log the crashes, reduce none at the end
  bool hooks = false;      // --against: programs with hooks too (hook_gen.h)
  bool modes = false;      // --against: the mode check too (mode_check.h)
  int modes_every = 1;     // --against --modes: on every N-th program
  bool modes_jax = false;  // --against --modes: JAX's answers too
  std::vector<std::string> reduce_crashes;  // --against: reduce these crash logs, run nothing
  bool keep_going = false;                  // report a failing batch and go on with the next one
  bool no_shrink = false;                   // report a failing case unshrunk
};

[[noreturn]] void usage(const char* error) {
  std::fprintf(
      stderr,
      "fuzz: %s\nusage: fuzz [--seed S] [--iterations N | --seconds T] [--property NAME]\n"
      "            [--max-nodes K] [--batch B] [--batch-seed X] [--list] [--against ENGINE]\n"
      "            [--keep-going] [--findings DIR] [--no-reduce] [--reduce-crashes LOG]...\n"
      "            [--hooks] [--modes [--modes-every N] [--modes-jax]] [--no-shrink]\n",
      error);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--list") {
      a.list = true;
      continue;
    }
    if (flag == "--keep-going") {
      a.keep_going = true;
      continue;
    }
    if (flag == "--modes" || flag == "--modes-jax") {
      a.modes = true;
      a.modes_jax |= flag == "--modes-jax";
      continue;
    }
    if (flag == "--hooks") {
      a.hooks = true;
      continue;
    }
    if (flag == "--no-shrink") {
      a.no_shrink = true;
      continue;
    }
    if (flag == "--no-reduce") {
      a.no_reduce = true;
      continue;
    }
    if (i + 1 >= argc) usage(("missing value for " + flag).c_str());
    const char* v = argv[++i];
    if (flag == "--seed")
      a.seed = std::strtoull(v, nullptr, 10);
    else if (flag == "--iterations")
      a.iterations = std::atoll(v);
    else if (flag == "--seconds")
      a.seconds = std::atof(v);
    else if (flag == "--property")
      a.property = v;
    else if (flag == "--max-nodes")
      a.max_nodes = std::atoi(v);
    else if (flag == "--batch")
      a.batch = std::atoi(v);
    else if (flag == "--batch-seed")
      a.batch_seed = std::atoll(v);
    else if (flag == "--against")
      a.against = v;
    else if (flag == "--findings")
      a.findings = v;
    else if (flag == "--modes-every")
      a.modes_every = std::atoi(v);
    else if (flag == "--reduce-crashes")
      a.reduce_crashes.push_back(v);
    else
      usage(("unknown flag " + flag).c_str());
  }
  if (a.batch <= 0 || a.max_nodes <= 0) usage("--batch and --max-nodes must be positive");
  return a;
}

uint64_t batch_seed(uint64_t seed, size_t property, int64_t batch) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ (property + 1) * 0xBF58476D1CE4E5B9ull ^
               static_cast<uint64_t>(batch) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x & 0x7FFFFFFFFFFFFFFFull;  // fits --batch-seed's signed parse
}

void print_coverage(const std::vector<std::pair<std::string, BatchResult>>& totals) {
  std::printf("\ncases per property:\n");
  for (const auto& [name, r] : totals) std::printf("  %-60s %10d\n", name.c_str(), r.cases);
  const FuzzStats::Snapshot s = fuzz_stats().snapshot();
  std::printf("graphs generated: %lld, largest: %lld\n", static_cast<long long>(s.graphs),
              static_cast<long long>(s.largest));
  for (const auto& [category, labels] : s.counts) {
    std::printf("%s:\n", category.c_str());
    for (const auto& [label, n] : labels) {
      std::printf("  %-50s %10lld\n", label.c_str(), static_cast<long long>(n));
    }
  }
}

int run(Args a) {
  if (!a.against.empty() && !a.reduce_crashes.empty()) {
    std::printf("%s", proptests::reduce_logged_crashes(
                          {a.against, a.seed, a.findings, true, a.hooks}, a.reduce_crashes, 100)
                          .c_str());
    return 0;
  }
  if (!a.against.empty()) {
    a.property = proptests::register_against({a.against, a.seed, a.findings, !a.no_reduce, a.hooks,
                                              a.modes, a.modes_every, a.modes_jax});
  }
  std::vector<const NamedProperty*> selected;
  for (const NamedProperty& p : property_registry()) {
    if (a.property.empty() || &p == find_property(a.property)) selected.push_back(&p);
  }
  if (a.list || selected.empty()) {
    for (const NamedProperty& p : property_registry()) std::printf("%s\n", p.name.c_str());
    return selected.empty() && !a.list ? 2 : 0;
  }
  // Each property gets an equal share of the time: the next batch goes to the property that
  // has used the least so far (fast properties run many more cases than slow ones).
  struct Progress {
    int64_t batches = 0;
    double seconds = 0;
  };
  std::vector<Progress> progress(selected.size());
  std::vector<std::pair<std::string, BatchResult>> totals;
  for (const NamedProperty* p : selected) totals.push_back({p->name, {}});
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  int64_t cases = 0, failures = 0;
  while (true) {
    const bool done = a.batch_seed >= 0 ? cases > 0 || progress[0].batches > 0
                      : a.seconds > 0   ? elapsed() >= a.seconds
                                        : cases >= a.iterations;
    if (done) {
      std::printf("\n%lld cases in %.1f s (%.0f cases/s), seed %llu, %lld failures\n",
                  static_cast<long long>(cases), elapsed(), cases / std::max(elapsed(), 1e-9),
                  static_cast<unsigned long long>(a.seed), static_cast<long long>(failures));
      print_coverage(totals);
      if (!a.against.empty()) {
        std::printf("%s", proptests::bug_class_report().c_str());
        std::fflush(stdout);
        std::printf("%s", proptests::crash_report().c_str());
      }
      return failures == 0 ? 0 : 1;
    }
    size_t i = 0;
    for (size_t k = 1; k < selected.size(); ++k) {
      if (progress[k].seconds < progress[i].seconds) i = k;
    }
    const uint64_t seed = a.batch_seed >= 0 ? static_cast<uint64_t>(a.batch_seed)
                                            : batch_seed(a.seed, i, progress[i].batches);
    const double before = elapsed();
    const BatchResult r = run_batch(*selected[i], seed, a.batch, a.max_nodes, !a.no_shrink);
    progress[i].seconds += elapsed() - before;
    ++progress[i].batches;
    cases += r.cases;
    totals[i].second.cases += r.cases;
    const FuzzStats::Snapshot s = fuzz_stats().snapshot();
    std::printf("\r%lld cases (%.0f/s) | graphs %lld | largest %lld | failures %d | %s      ",
                static_cast<long long>(cases), cases / std::max(elapsed(), 1e-9),
                static_cast<long long>(s.graphs), static_cast<long long>(s.largest),
                static_cast<int>(failures + (r.passed ? 0 : 1)), selected[i]->name.c_str());
    std::fflush(stdout);
    if (!r.passed) {
      std::printf(
          "\n\nFAILED %s\n%s\nreplay: bazel run -c opt //proptests:fuzz -- --property %s "
          "--batch-seed %llu --batch %d --max-nodes %d%s\n",
          selected[i]->name.c_str(), r.failure.c_str(), selected[i]->name.c_str(),
          static_cast<unsigned long long>(seed), a.batch, a.max_nodes,
          a.against.empty() ? "" : (" --against " + a.against).c_str());
      if (!a.against.empty()) std::printf("%s", proptests::reduced_last_mismatch().c_str());
      if (!a.keep_going) return 1;
      ++failures;
    }
  }
}

}  // namespace
}  // namespace ag::proptests

int main(int argc, char** argv) { return ag::proptests::run(ag::proptests::parse(argc, argv)); }
