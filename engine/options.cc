#include "engine/options.h"

#include <mutex>

namespace ag {

namespace {
std::mutex default_mutex;
EngineOptions process_default;
thread_local const EngineOptions* thread_override = nullptr;
}  // namespace

EngineOptions default_options() {
  std::lock_guard<std::mutex> lock(default_mutex);
  return process_default;
}

void set_default_options(const EngineOptions& options) {
  std::lock_guard<std::mutex> lock(default_mutex);
  process_default = options;
}

EngineOptions current_options() { return thread_override ? *thread_override : default_options(); }

OptionsGuard::OptionsGuard(const EngineOptions& options)
    : previous_(thread_override), options_(options) {
  thread_override = &options_;
}

OptionsGuard::~OptionsGuard() { thread_override = previous_; }

}  // namespace ag
