// create_autodiff_subgraphs time vs graph size, AliasDb rebuilt after every
// merge ("rebuild", the O(n^2) before) vs updated in place ("incremental",
// the after; seed 002).
//
//   bazel run -c opt //paper:jit_pass_bench [-- --max-rebuild-nodes N --repeats R]
//
// Prints a Markdown table: nodes, mode, pass seconds (best of R runs), seconds
// per node (wall, and this thread's CPU time: a loaded machine deschedules long
// runs, not short ones), AliasDb constructions and elements created, merges. Rebuild mode is
// skipped above --max-rebuild-nodes (default 10000) because it is quadratic:
// the row then says so and gives the quadratic extrapolation from the largest
// size measured.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/jit/create_autodiff_subgraphs.h"
#include "engine/jit/synthetic_graph.h"
#include "paper/workloads/timing.h"

namespace {

using ag::jit::AliasDbMode;

struct Row {
  size_t nodes;
  AliasDbMode mode;
  double seconds;
  double cpu_seconds;
  long minor_faults;  // page faults taken during the pass (fewest over the runs)
  ag::jit::AutodiffSubgraphStats stats;
};

long thread_minor_faults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

Row measure(size_t nodes, AliasDbMode mode, int repeats) {
  Row row{nodes, mode, 1e300, 1e300, -1, {}};
  for (int r = 0; r < repeats; ++r) {
    auto g = ag::jit::makeLayeredGraph(nodes);
    ag::jit::AutodiffSubgraphOptions options;
    options.mode = mode;
    auto start = std::chrono::steady_clock::now();
    const double cpu_start = ag::paper::thread_cpu_seconds();
    const long faults_start = thread_minor_faults();
    row.stats = ag::jit::createAutodiffSubgraphs(*g, options);
    const long faults = thread_minor_faults() - faults_start;
    row.minor_faults = row.minor_faults < 0 ? faults : std::min(row.minor_faults, faults);
    row.cpu_seconds = std::min(row.cpu_seconds, ag::paper::thread_cpu_seconds() - cpu_start);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    row.seconds = std::min(row.seconds, s);
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  size_t max_rebuild_nodes = 10000;
  int repeats = 3;
  std::vector<size_t> sizes = {1000, 2000, 5000, 10000, 100000};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--max-rebuild-nodes") == 0 && i + 1 < argc) {
      max_rebuild_nodes = std::strtoul(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      sizes.clear();
      for (char* p = argv[++i]; *p != '\0'; p += *p == ',')
        sizes.push_back(std::strtoul(p, &p, 10));
    } else {
      std::fprintf(stderr, "usage: %s [--max-rebuild-nodes N] [--repeats R] [--sizes N,N,...]\n",
                   argv[0]);
      return 2;
    }
  }

  std::printf("create_autodiff_subgraphs on makeLayeredGraph(n), best of %d\n\n", repeats);
  std::printf(
      "| nodes | mode | pass s | s/node | CPU s/node | AliasDb constructions | AliasDb elements "
      "| merges | page faults per node |\n");
  std::printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
  const Row* last_rebuild = nullptr;
  std::vector<Row> rows;
  rows.reserve(2 * sizes.size());
  for (size_t n : sizes) {
    for (AliasDbMode mode : {AliasDbMode::kIncremental, AliasDbMode::kRebuild}) {
      if (mode == AliasDbMode::kRebuild && n > max_rebuild_nodes) {
        double estimate = last_rebuild == nullptr
                              ? 0
                              : last_rebuild->seconds * (double(n) / double(last_rebuild->nodes)) *
                                    (double(n) / double(last_rebuild->nodes));
        std::printf("| %zu | rebuild | skipped (~%.0f s by n^2 extrapolation) | | | | | | |\n", n,
                    estimate);
        continue;
      }
      rows.push_back(measure(n, mode, mode == AliasDbMode::kRebuild && n >= 10000 ? 1 : repeats));
      const Row& r = rows.back();
      if (mode == AliasDbMode::kRebuild) last_rebuild = &r;
      std::printf("| %zu | %s | %.4f | %.3g | %.3g | %zu | %zu | %zu | %.3g |\n", r.nodes,
                  ag::jit::modeName(r.mode), r.seconds, r.seconds / double(r.nodes),
                  r.cpu_seconds / double(r.nodes), r.stats.alias_db_constructions,
                  r.stats.alias_db_elements_created, r.stats.merges,
                  double(r.minor_faults) / double(r.nodes));
      std::fflush(stdout);
    }
  }
  return 0;
}
