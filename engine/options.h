#pragma once

#include <cstdint>
#include <string>

namespace ag {

// The switchable optimizations. All on by default; every benchmark and property compares
// "off" and "on" in one process.
struct EngineOptions {
  // Note [Topological number]: discovery never expands nodes that cannot reach an input.
  bool prune_by_topo_nr = true;
  // Note [Reachability signature]: a second, finer discovery cut (engine/reach_signature.h).
  bool prune_by_reachability = true;
  // Note [Per-call view]: nodes evaluate only the formulas this call needs.
  bool per_call_needs_input_grad = true;
  // Note [Guarded saves]: ops save a value only if a formula that can run needs it.
  bool guard_saves = true;
  // Note [Products with a zero operand] (ops/cpu/zero_operand.h): a CPU product with an all-zero
  // operand is written as zeros instead of multiplied. Off: every product multiplies, as PyTorch's
  // kernels do (seed 001's off / on comparison runs with it off).
  bool skip_zero_products = true;
  // Note [Sums fused into formulas] (engine/engine.cc): without create_graph, an elementwise
  // formula whose gradient meets one already waiting adds itself into it in the same pass.
  bool fuse_gradient_sums = true;

  static EngineOptions all_off() {
    return EngineOptions()
        .with_prune_by_topo_nr(false)
        .with_prune_by_reachability(false)
        .with_per_call_needs_input_grad(false)
        .with_guard_saves(false)
        .with_skip_zero_products(false)
        .with_fuse_gradient_sums(false);
  }
  // Copies with one switch changed: EngineOptions().with_prune_by_reachability(false).
  EngineOptions with_prune_by_topo_nr(bool on) const {
    return with(&EngineOptions::prune_by_topo_nr, on);
  }
  EngineOptions with_prune_by_reachability(bool on) const {
    return with(&EngineOptions::prune_by_reachability, on);
  }
  EngineOptions with_per_call_needs_input_grad(bool on) const {
    return with(&EngineOptions::per_call_needs_input_grad, on);
  }
  EngineOptions with_guard_saves(bool on) const { return with(&EngineOptions::guard_saves, on); }
  EngineOptions with_skip_zero_products(bool on) const {
    return with(&EngineOptions::skip_zero_products, on);
  }
  EngineOptions with_fuse_gradient_sums(bool on) const {
    return with(&EngineOptions::fuse_gradient_sums, on);
  }

  // The switches as bits, prune_by_topo_nr the lowest and then in the order above, and back: the
  // process-wide default is kept in one word, and tests enumerate all kCombinations.
  static constexpr uint32_t kCombinations = 64;
  uint32_t bits() const;
  static EngineOptions from_bits(uint32_t bits);

  bool operator==(const EngineOptions& o) const {
    return prune_by_topo_nr == o.prune_by_topo_nr &&
           prune_by_reachability == o.prune_by_reachability &&
           per_call_needs_input_grad == o.per_call_needs_input_grad &&
           guard_saves == o.guard_saves && skip_zero_products == o.skip_zero_products &&
           fuse_gradient_sums == o.fuse_gradient_sums;
  }

 private:
  EngineOptions with(bool EngineOptions::*field, bool on) const {
    EngineOptions copy = *this;
    copy.*field = on;
    return copy;
  }
};

// The switches that are on, by name ("topo_nr reachability per_call guard_saves
// skip_zero_products fuse_sums" for the default), or "none": for graph descriptions and failure
// messages.
std::string to_string(const EngineOptions& options);

// The options in force on this thread: a scoped override if one is active, else the process-wide
// default.
EngineOptions current_options();
void set_default_options(const EngineOptions& options);
EngineOptions default_options();

// Overrides the options on this thread for its lifetime (forward ops read guard_saves from here;
// backward()/grad() read the rest unless given options explicitly).
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
