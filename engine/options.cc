#include "engine/options.h"

#include <atomic>
#include <cstdint>

namespace ag {

namespace {

// The list's fields as pointers to members, in its order: bit k is kFields[k].
#define AG_OPTION_MEMBER(field, name, reader) &EngineOptions::field,
constexpr bool EngineOptions::*kFields[] = {AG_ENGINE_OPTIONS(AG_OPTION_MEMBER)};
#undef AG_OPTION_MEMBER
#define AG_OPTION_NAME(field, name, reader) name,
constexpr const char* kNames[] = {AG_ENGINE_OPTIONS(AG_OPTION_NAME)};
#undef AG_OPTION_NAME
#define AG_OPTION_READER(field, name, reader) OptionReader::reader,
constexpr OptionReader kReaders[] = {AG_ENGINE_OPTIONS(AG_OPTION_READER)};
#undef AG_OPTION_READER
static_assert(sizeof(kFields) / sizeof(kFields[0]) == EngineOptions::kCount);

}  // namespace

const char* option_name(int k) { return kNames[k]; }
OptionReader option_reader(int k) { return kReaders[k]; }

std::string to_string(const EngineOptions& o) {
  std::string s;
  for (int k = 0; k < EngineOptions::kCount; ++k) {
    if (!(o.*kFields[k])) continue;
    if (!s.empty()) s += ' ';
    s += kNames[k];
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
