#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ag {

// Deterministic measures of the engine's work. Tests assert on these (never on time). They are
// per thread: backward runs on the calling thread, so a test reads exactly its own calls' work
// even while other threads run backward on the same graph.
struct Counters {
  int64_t nodes_discovered = 0;    // nodes reached by the discovery traversal
  int64_t nodes_executed = 0;      // apply() calls
  int64_t formulas_evaluated = 0;  // derivative formulas run (built-in ops and custom Functions)
  int64_t bytes_saved = 0;         // bytes of tensors saved for backward by forward ops
  // Per formula, keyed "op:input" (e.g. "mm:mat2"), and per saved slot, keyed "op:slot".
  std::map<std::string, int64_t> formula_counts;
  std::map<std::string, int64_t> save_counts;
  // When trace_executed is set, the sequence_nr of every node apply()-ed, in order (tests
  // compare the executed set with the root-to-input paths they compute themselves).
  bool trace_executed = false;
  std::vector<uint64_t> executed;

  int64_t formula_count(const std::string& key) const {
    auto it = formula_counts.find(key);
    return it == formula_counts.end() ? 0 : it->second;
  }
};

Counters& counters();  // this thread's counters
void reset_counters();

}  // namespace ag
