// The sections of paper/results, one per workload: each measures ours and the peers in
// interleaved rounds, under every measuring condition, adds its figures to the run's results and
// appends its text and tables to a report. paper/reproduce.cc calls them in order.
#pragma once

#include <filesystem>
#include <vector>

#include "paper/harness/load.h"
#include "paper/harness/markdown.h"
#include "paper/harness/peers.h"
#include "paper/harness/results.h"

namespace ag::paper {

struct Context {
  bool quick = false;
  bool callgrind = true;
  bool plots = true;
  int threads = 1;                    // ours, and every peer's
  std::vector<Condition> conditions;  // quiet first; busy ones with --busy
  Results* results = nullptr;
  Peers* peers = nullptr;
  std::filesystem::path out;            // where this run writes its reports and figures
  std::filesystem::path saved_results;  // paper/results in the source tree (saved CUDA rows)
};

// Prints "[reproduce i/n] what".
void progress(int index, const std::string& what);
inline constexpr int kSteps = 9;

void unrolled_loop_section(const Context& context, Report& report);  // seed 000
void overhead_section(const Context& context, Report& report);       // seed 000, issue 2
void hessian_section(const Context& context, Report& report);        // seed 001
void memory_section(const Context& context, Report& report);         // seed 003
void jit_pass_section(const Context& context, Report& report);       // seed 002
void jit_traced_tables(const Context& context, Report& report);      // seed 002, traced programs
void graph_section(const Context& context, Report& report);          // seed 001's graph, drawn
void views_section(const Context& context, Report& report);          // issue 44, views in loops
void hooks_section(const Context& context, Report& report);    // issue 45, hooks and checkpointing
void forward_section(const Context& context, Report& report);  // issue 46, forward mode
void forward_section(const Context& context, Report& report);  // issue 46, forward mode

}  // namespace ag::paper
