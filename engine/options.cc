#include "engine/options.h"

#include <atomic>
#include <cstdint>

namespace ag {

namespace {

// The process-wide default, packed into one word so that every recorded op can read it with a
// plain load instead of taking a lock.
uint32_t pack(const EngineOptions& o) {
  return uint32_t{o.prune_by_topo_nr} | uint32_t{o.prune_by_reachability} << 1 |
         uint32_t{o.per_call_needs_input_grad} << 2 | uint32_t{o.guard_saves} << 3 |
         uint32_t{o.skip_zero_products} << 4;
}

EngineOptions unpack(uint32_t bits) {
  return EngineOptions()
      .with_prune_by_topo_nr((bits & 1) != 0)
      .with_prune_by_reachability((bits & 2) != 0)
      .with_per_call_needs_input_grad((bits & 4) != 0)
      .with_guard_saves((bits & 8) != 0)
      .with_skip_zero_products((bits & 16) != 0);
}

std::atomic<uint32_t> process_default{pack(EngineOptions())};
thread_local const EngineOptions* thread_override = nullptr;

}  // namespace

EngineOptions default_options() { return unpack(process_default.load(std::memory_order_relaxed)); }

void set_default_options(const EngineOptions& options) {
  process_default.store(pack(options), std::memory_order_relaxed);
}

EngineOptions current_options() { return thread_override ? *thread_override : default_options(); }

OptionsGuard::OptionsGuard(const EngineOptions& options)
    : previous_(thread_override), options_(options) {
  thread_override = &options_;
}

OptionsGuard::~OptionsGuard() { thread_override = previous_; }

}  // namespace ag
