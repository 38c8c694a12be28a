#include "engine/options.h"

#include <atomic>
#include <cstdint>
#include <utility>

namespace ag {

uint32_t EngineOptions::bits() const {
  return uint32_t{prune_by_topo_nr} | uint32_t{prune_by_reachability} << 1 |
         uint32_t{per_call_needs_input_grad} << 2 | uint32_t{guard_saves} << 3 |
         uint32_t{skip_zero_products} << 4 | uint32_t{fuse_gradient_sums} << 5;
}

EngineOptions EngineOptions::from_bits(uint32_t bits) {
  return EngineOptions()
      .with_prune_by_topo_nr((bits & 1) != 0)
      .with_prune_by_reachability((bits & 2) != 0)
      .with_per_call_needs_input_grad((bits & 4) != 0)
      .with_guard_saves((bits & 8) != 0)
      .with_skip_zero_products((bits & 16) != 0)
      .with_fuse_gradient_sums((bits & 32) != 0);
}

std::string to_string(const EngineOptions& o) {
  std::string s;
  for (auto [on, name] :
       {std::pair{o.prune_by_topo_nr, "topo_nr"},
        std::pair{o.prune_by_reachability, "reachability"},
        std::pair{o.per_call_needs_input_grad, "per_call"}, std::pair{o.guard_saves, "guard_saves"},
        std::pair{o.skip_zero_products, "skip_zero_products"},
        std::pair{o.fuse_gradient_sums, "fuse_sums"}}) {
    if (on) s += s.empty() ? name : std::string(" ") + name;
  }
  return s.empty() ? "none" : s;
}

namespace {

// The process-wide default, packed into one word so that every recorded op can read it with a
// plain load instead of taking a lock.
std::atomic<uint32_t> process_default{EngineOptions().bits()};
thread_local const EngineOptions* thread_override = nullptr;

}  // namespace

EngineOptions default_options() {
  return EngineOptions::from_bits(process_default.load(std::memory_order_relaxed));
}

void set_default_options(const EngineOptions& options) {
  process_default.store(options.bits(), std::memory_order_relaxed);
}

EngineOptions current_options() { return thread_override ? *thread_override : default_options(); }

OptionsGuard::OptionsGuard(const EngineOptions& options)
    : previous_(thread_override), options_(options) {
  thread_override = &options_;
}

OptionsGuard::~OptionsGuard() { thread_override = previous_; }

}  // namespace ag
