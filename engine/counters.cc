#include "engine/counters.h"

#include <deque>
#include <mutex>
#include <unordered_map>

namespace ag {

namespace {

// Interned names: only touched when a key is made or looked up by name, never while counting.
struct KeyRegistry {
  std::mutex mutex;
  std::unordered_map<std::string, int> ids;
  std::deque<std::string> names;  // by id; a deque keeps references stable as it grows
};

KeyRegistry& registry() {
  static KeyRegistry r;
  return r;
}

// The id of `name`, or -1 if it was never interned.
int find_key(const std::string& name) {
  KeyRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.ids.find(name);
  return it == r.ids.end() ? -1 : it->second;
}

}  // namespace

CounterKey::CounterKey(const std::string& name) {
  KeyRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto [it, inserted] = r.ids.emplace(name, static_cast<int>(r.names.size()));
  if (inserted) r.names.push_back(name);
  id_ = it->second;
}

const std::string& CounterKey::name_of(int id) {
  KeyRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.names[static_cast<size_t>(id)];
}

int64_t Counters::read(const std::vector<int64_t>& counts, const std::string& key) {
  const int id = find_key(key);
  return id >= 0 && static_cast<size_t>(id) < counts.size() ? counts[id] : 0;
}

std::map<std::string, int64_t> Counters::save_counts() const {
  std::map<std::string, int64_t> out;
  for (size_t id = 0; id < saves_.size(); ++id) {
    if (saves_[id] != 0) out[CounterKey::name_of(static_cast<int>(id))] = saves_[id];
  }
  return out;
}

void reset_counters() { counters() = Counters{}; }

}  // namespace ag
