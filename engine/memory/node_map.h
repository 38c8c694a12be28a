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
//
// Note [Reused node states]
// clear() keeps the entries as well as the table: the next call's nodes take them over, each
// emptied by Value::reset(), which must drop everything the value holds (no tensor outlives its
// call) but keep its containers' memory. A backward call over a graph no larger than an earlier
// one on the same thread then allocates nothing for its per-node state.
template <typename Value>
class NodeMap {
 public:
  NodeMap() : slots_(16, kEmpty) { entries_.reserve(8); }

  // Inline for keys already present (most lookups); insertion is out of line.
  Value& operator[](const Node* key) {
    const size_t s = slot_of(key);
    if (slots_[s] != kEmpty) return entries_[slots_[s]].value;
    return insert(key, s);
  }
  const Value* find(const Node* key) const {
    const int32_t i = slots_[slot_of(key)];
    return i == kEmpty ? nullptr : &entries_[i].value;
  }

  // Empties the map, keeping its memory for the next call unless it grew large.
  void clear() {
    for (size_t i = 0; i < size_; ++i) entries_[i].value.reset();
    size_ = 0;
    if (slots_.size() > kKeptSlots) {
      slots_ = std::vector<int32_t>(16, kEmpty);
      mask_ = 15;
      entries_.clear();
      entries_.shrink_to_fit();
    } else {
      std::fill(slots_.begin(), slots_.end(), kEmpty);
    }
  }

 private:
  static constexpr int32_t kEmpty = -1;
  static constexpr size_t kKeptSlots = 4096;  // graphs of up to 2048 nodes keep their memory

  struct Entry {
    const Node* key = nullptr;
    Value value;
  };

  // Adds `key`, absent, whose empty slot is `s`.
  [[gnu::noinline]] Value& insert(const Node* key, size_t s) {
    if (2 * (size_ + 1) > slots_.size()) {
      grow();
      s = slot_of(key);
    }
    slots_[s] = static_cast<int32_t>(size_);
    if (size_ == entries_.size()) entries_.emplace_back();  // else reset by clear()
    Entry& entry = entries_[size_++];
    entry.key = key;
    return entry.value;
  }

  // The slot holding `key`, or the empty slot where it would go (linear probing).
  size_t slot_of(const Node* key) const {
    size_t s = (reinterpret_cast<uintptr_t>(key) >> 4) * 0x9E3779B97F4A7C15ull >> 20 & mask_;
    while (slots_[s] != kEmpty && entries_[slots_[s]].key != key) s = (s + 1) & mask_;
    return s;
  }
  void grow() {
    slots_.assign(slots_.size() * 2, kEmpty);
    mask_ = slots_.size() - 1;
    for (size_t i = 0; i < size_; ++i) slots_[slot_of(entries_[i].key)] = static_cast<int32_t>(i);
  }

  std::vector<Entry> entries_;  // the first size_ are in use; the rest were reset by clear()
  size_t size_ = 0;
  std::vector<int32_t> slots_;  // index into entries_, or kEmpty; size is a power of two
  size_t mask_ = 15;            // slots_.size() - 1
};

}  // namespace ag
