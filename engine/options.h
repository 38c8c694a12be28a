#pragma once

#include <cstdint>
#include <string>

namespace ag {

// Note [Engine options]
// The switchable optimizations, one line each, all on by default, so that every benchmark and
// property compares "off" and "on" in one process:
//
//   X(field, "name", reader)
//
// From the list come the fields of EngineOptions, their with_*() setters, all_off(), the bits
// (the list's order, the first line the lowest bit), the number of combinations, equality and
// the names of to_string(). The reader says when a switch is read:
//   kCall  by the engine, while a backward call runs (discovery, the per-call view, its sums);
//   kOps   by the ops, when they record a node or run a kernel: during the forward, and during a
//          backward call for the ops its formulas run (under create_graph they record nodes).
// Both kinds are set the same ways: for one grad()/backward() call (GradArgs().engine_options()),
// for a scope (OptionsGuard) or for the process (set_default_options). A call's options are in
// force for the ops its formulas run as well (execute(), engine/engine.cc), so the two ways of
// setting them for a call cannot be told apart.
//
// A new option is its line here, the code where it acts, and its test.
//
// clang-format off
#define AG_ENGINE_OPTIONS(X)                                                                    \
  /* Note [Topological number]: discovery never expands nodes that cannot reach an input. */    \
  X(prune_by_topo_nr, "topo_nr", kCall)                                                         \
  /* Note [Reachability signature]: a second, finer discovery cut. */                           \
  X(prune_by_reachability, "reachability", kCall)                                               \
  /* Note [Per-call view]: nodes evaluate only the formulas this call needs. */                 \
  X(per_call_needs_input_grad, "per_call", kCall)                                               \
  /* Note [Guarded saves]: ops save a value only if a formula that can run needs it. */         \
  X(guard_saves, "guard_saves", kOps)                                                           \
  /* Note [Products with a zero operand]: a product with an all-zero operand is written as   */ \
  /* zeros instead of multiplied. Off: every product multiplies, as PyTorch's kernels do.    */ \
  X(skip_zero_products, "skip_zero_products", kOps)                                             \
  /* Note [Sums fused into formulas]: without create_graph, an elementwise formula whose     */ \
  /* gradient meets one already waiting adds itself into it in the same pass.                */ \
  X(fuse_gradient_sums, "fuse_sums", kCall)
// clang-format on

// When a switch is read (Note [Engine options]).
enum class OptionReader : uint8_t { kCall, kOps };

struct EngineOptions {
#define AG_OPTION_FIELD(field, name, reader) bool field = true;
  AG_ENGINE_OPTIONS(AG_OPTION_FIELD)
#undef AG_OPTION_FIELD

  // Copies with one switch changed: EngineOptions().with_prune_by_reachability(false).
#define AG_OPTION_SETTER(field, name, reader) \
  EngineOptions with_##field(bool on) const { \
    EngineOptions copy = *this;               \
    copy.field = on;                          \
    return copy;                              \
  }
  AG_ENGINE_OPTIONS(AG_OPTION_SETTER)
#undef AG_OPTION_SETTER

  static EngineOptions all_off() { return from_bits(0); }

  // The switches as bits, in the list's order, and back: the process-wide default is kept in one
  // word, and tests enumerate all kCombinations.
#define AG_OPTION_ONE(field, name, reader) +1
  static constexpr int kCount = 0 AG_ENGINE_OPTIONS(AG_OPTION_ONE);
#undef AG_OPTION_ONE
  static constexpr uint32_t kCombinations = uint32_t{1} << kCount;
  uint32_t bits() const {
    uint32_t out = 0, k = 0;
#define AG_OPTION_BIT(field, name, reader) out |= uint32_t{field} << k++;
    AG_ENGINE_OPTIONS(AG_OPTION_BIT)
#undef AG_OPTION_BIT
    return out;
  }
  static EngineOptions from_bits(uint32_t bits) {
    EngineOptions o;
    uint32_t k = 0;
#define AG_OPTION_FROM_BIT(field, name, reader) o.field = ((bits >> k++) & 1) != 0;
    AG_ENGINE_OPTIONS(AG_OPTION_FROM_BIT)
#undef AG_OPTION_FROM_BIT
    return o;
  }

  bool operator==(const EngineOptions& o) const { return bits() == o.bits(); }
  bool operator!=(const EngineOptions& o) const { return !(*this == o); }
};

// Option k of the list (0 <= k < EngineOptions::kCount): its name and when it is read.
const char* option_name(int k);
OptionReader option_reader(int k);

// The switches that are on, by name ("topo_nr reachability per_call guard_saves
// skip_zero_products fuse_sums" for the default), or "none": for graph descriptions and failure
// messages.
std::string to_string(const EngineOptions& options);

// The options in force on this thread: a scoped override if one is active (an OptionsGuard, or
// the options of the backward call running on this thread), else the process-wide default.
EngineOptions current_options();
void set_default_options(const EngineOptions& options);
EngineOptions default_options();

// Overrides the options on this thread for its lifetime.
class OptionsGuard {
 public:
  explicit OptionsGuard(const EngineOptions& options);
  ~OptionsGuard();
  OptionsGuard(const OptionsGuard&) = delete;
  OptionsGuard& operator=(const OptionsGuard&) = delete;

 private:
  const EngineOptions* previous_;
  EngineOptions options_;
};

}  // namespace ag
