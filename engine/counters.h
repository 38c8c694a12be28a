#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ag {

// A name a counter is kept under ("mm:mat2" for mm's formula for mat2, "mul:other" for mul's
// saved slot `other`), interned once (when an op's spec is built, or a custom Function is first
// applied) so that counting is an indexed increment, not a string lookup.
class CounterKey {
 public:
  explicit CounterKey(const std::string& name);
  int id() const { return id_; }
  const std::string& name() const { return name_of(id_); }
  static const std::string& name_of(int id);

 private:
  int id_;
};

// Deterministic measures of the engine's work. Tests assert on these (never on time). They are
// per thread: backward runs on the calling thread, so a test reads exactly its own calls' work
// even while other threads run backward on the same graph.
struct Counters {
  int64_t nodes_expanded = 0;      // nodes whose edges discovery followed (not cut)
  int64_t nodes_executed = 0;      // apply() calls
  int64_t formulas_evaluated = 0;  // derivative formulas run (built-in ops and custom Functions)
  int64_t bytes_saved = 0;         // bytes of the tensors that forward ops saved for backward
  // CPU products written as zeros because an operand was all zeros (Note [Products with a zero
  // operand], ops/cpu/zero_operand.h).
  int64_t products_of_zeros = 0;
  // Of those, the products whose zero operand was known without reading it (Note [Known zeros],
  // engine/memory/storage.h): the only kind the CUDA backend can skip without waiting for the
  // device.
  int64_t products_of_known_zeros = 0;
  // Derivative formulas run as one fused kernel instead of the ops they chain (Note [Fused
  // formula kernels], ops/elementwise.cc).
  int64_t fused_formulas = 0;
  // Formulas that added their values into a gradient already waiting for them instead of
  // returning a new one (Note [Sums fused into formulas], engine/engine.cc).
  int64_t fused_sums = 0;
  // Formulas that wrote their value over the incoming gradient instead of into a new tensor
  // (Note [Formulas in the incoming gradient], ops/spec.h).
  int64_t formulas_in_place = 0;
  // When trace_executed is set, the sequence_nr of every node apply()-ed, in order (tests
  // compare the executed set with the root-to-input paths they compute themselves).
  bool trace_executed = false;
  std::vector<uint64_t> executed;

  void count_formula(const CounterKey& key) { ++slot(formulas_, key); }
  void count_save(const CounterKey& key) { ++slot(saves_, key); }
  // How often the formula / saved slot named `key` counted, e.g. formula_count("mm:mat2").
  int64_t formula_count(const std::string& key) const { return read(formulas_, key); }
  int64_t save_count(const std::string& key) const { return read(saves_, key); }
  // Every saved slot that counted, by name.
  std::map<std::string, int64_t> save_counts() const;

 private:
  static int64_t& slot(std::vector<int64_t>& counts, const CounterKey& key) {
    if (static_cast<size_t>(key.id()) >= counts.size()) counts.resize(key.id() + 1);
    return counts[key.id()];
  }
  static int64_t read(const std::vector<int64_t>& counts, const std::string& key);
  std::vector<int64_t> formulas_;  // by CounterKey id
  std::vector<int64_t> saves_;
};

// This thread's counters. Inline: recorded ops and the engine bump them a dozen times per tiny
// backward call, and the call cost more than the thread-local lookup it wraps.
inline Counters& counters() {
  thread_local Counters c;
  return c;
}
void reset_counters();

}  // namespace ag
