#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace ag {

class Node;

// A map from node to the per-call state of one backward call. A flat open-addressing table over
// a vector of entries (kept in insertion order): a call touches few nodes on small graphs, where
// std::unordered_map's allocation per entry dominated the engine's overhead.
// References returned by operator[] stay valid until the next insertion.
template <typename Value>
class NodeMap {
 public:
  using Entry = std::pair<const Node*, Value>;

  NodeMap() : slots_(16, kEmpty) { entries_.reserve(8); }

  Value& operator[](const Node* key) {
    size_t s = slot_of(key);
    if (slots_[s] != kEmpty) return entries_[slots_[s]].second;
    if (2 * (entries_.size() + 1) > slots_.size()) {
      grow();
      s = slot_of(key);
    }
    slots_[s] = static_cast<int32_t>(entries_.size());
    entries_.emplace_back(key, Value{});
    return entries_.back().second;
  }
  const Value* find(const Node* key) const {
    const int32_t i = slots_[slot_of(key)];
    return i == kEmpty ? nullptr : &entries_[i].second;
  }
  std::vector<Entry>& entries() { return entries_; }

  // Empties the map, keeping its memory for the next call unless it grew large.
  void clear() {
    entries_.clear();
    if (slots_.size() > kKeptSlots) {
      slots_ = std::vector<int32_t>(16, kEmpty);
      entries_.shrink_to_fit();
    } else {
      std::fill(slots_.begin(), slots_.end(), kEmpty);
    }
  }

 private:
  static constexpr int32_t kEmpty = -1;
  static constexpr size_t kKeptSlots = 1024;

  // The slot holding `key`, or the empty slot where it would go (linear probing).
  size_t slot_of(const Node* key) const {
    const size_t mask = slots_.size() - 1;
    size_t s = (reinterpret_cast<uintptr_t>(key) >> 4) * 0x9E3779B97F4A7C15ull >> 20 & mask;
    while (slots_[s] != kEmpty && entries_[slots_[s]].first != key) s = (s + 1) & mask;
    return s;
  }
  void grow() {
    slots_.assign(slots_.size() * 2, kEmpty);
    for (size_t i = 0; i < entries_.size(); ++i)
      slots_[slot_of(entries_[i].first)] = static_cast<int32_t>(i);
  }

  std::vector<Entry> entries_;
  std::vector<int32_t> slots_;  // index into entries_, or kEmpty; size is a power of two
};

}  // namespace ag
