#include "engine/jit/memory_dag.h"

#include <algorithm>
#include <iterator>
#include <unordered_set>

namespace ag::jit {

// Note [Compact alias tables]
// AliasDb keeps a few facts per element and per value, for every value of the graph. At 100k
// nodes those tables outgrow the caches, and every byte they take is a byte the pass first has
// to fault in (a fresh AliasDb is mostly memory the process never touched) and then misses on.
// So an element costs 32 bytes: its points-to list and its cached memory locations are
// ElementLists (one element inline), the two flags are bits, and the few elements that contain
// others (lists) keep their contents in a side map.

ElementList& ElementList::operator=(const ElementList& other) {
  if (this != &other) assign(other.begin(), other.end());
  return *this;
}

ElementList& ElementList::operator=(ElementList&& other) noexcept {
  if (this != &other) {
    release();
    steal(other);
  }
  return *this;
}

void ElementList::release() {
  if (onHeap()) delete[] many_;
  size_ = 0;
  capacity_ = 1;
  one_ = 0;
}

void ElementList::steal(ElementList& other) noexcept {
  size_ = other.size_;
  capacity_ = other.capacity_;
  if (other.onHeap()) {
    many_ = other.many_;
  } else {
    one_ = other.one_;
  }
  other.size_ = 0;
  other.capacity_ = 1;
  other.one_ = 0;
}

void ElementList::reserve(uint32_t capacity) {
  if (capacity <= capacity_) return;
  auto* grown = new Element[capacity];
  std::copy(begin(), end(), grown);
  const uint32_t size = size_;
  release();
  size_ = size;
  capacity_ = capacity;
  many_ = grown;
}

void ElementList::push_back(Element e) {
  if (size_ == capacity_) reserve(std::max<uint32_t>(4, 2 * capacity_));
  data()[size_++] = e;
}

void ElementList::assign(const Element* first, const Element* last) {
  const auto n = static_cast<uint32_t>(last - first);
  if (n > capacity_) {
    release();
    reserve(n);
  }
  std::copy(first, last, data());
  size_ = n;
}

bool LocationSet::intersects(const LocationSet& other) const {
  const Element* a = locations_.begin();
  const Element* a_end = locations_.end();
  const Element* b = other.locations_.begin();
  const Element* b_end = other.locations_.end();
  while (a != a_end && b != b_end) {
    if (*a == *b) return true;
    if (*a < *b) {
      ++a;
    } else {
      ++b;
    }
  }
  return false;
}

void LocationSet::insertAll(const LocationSet& other) {
  if (other.empty()) return;
  if (empty()) {
    *this = other;
    return;
  }
  std::vector<Element> merged;
  merged.reserve(locations_.size() + other.locations_.size());
  std::set_union(locations_.begin(), locations_.end(), other.locations_.begin(),
                 other.locations_.end(), std::back_inserter(merged));
  locations_.assign(merged.data(), merged.data() + merged.size());
}

Element MemoryDag::makeFreshElement() {
  points_to_.emplace_back();
  pointed_to_.push_back(false);
  has_contents_.push_back(false);
  // A new element points nowhere: it is its own memory location, and that is its cached answer
  // from the start (no walk, and nothing to forget until it points somewhere).
  const auto e = static_cast<Element>(points_to_.size() - 1);
  cache_.emplace_back(e);
  cached_.push_back(true);
  return e;
}

void MemoryDag::reserve(size_t elements) {
  points_to_.reserve(elements);
  pointed_to_.reserve(elements);
  has_contents_.reserve(elements);
  cache_.reserve(elements);
  cached_.reserve(elements);
}

void MemoryDag::invalidateCacheFor(Element from) {
  cached_[from] = false;
  if (pointed_to_[from]) {
    // The answers of whatever points at `from` change too: forget every walked answer. (Answers
    // set at creation belong to elements that point nowhere, which do not depend on `from`.)
    for (Element e : cached_list_) cached_[e] = false;
    cached_list_.clear();
  }
}

void MemoryDag::makePointerTo(Element from, Element to) {
  if (from == to) return;
  ElementList& pts = points_to_[from];
  if (std::find(pts.begin(), pts.end(), to) != pts.end()) return;
  pts.push_back(to);
  pointed_to_[to] = true;
  invalidateCacheFor(from);
}

void MemoryDag::addToContainedElements(Element contained, Element container) {
  std::vector<Element>& c = contained_[container];
  if (std::find(c.begin(), c.end(), contained) == c.end()) c.push_back(contained);
  has_contents_[container] = true;
}

const LocationSet& MemoryDag::memoryLocations(Element root) const {
  if (cached_[root]) return cache_[root];
  // Iterative post-order walk (chains of views can be very long).
  std::vector<std::pair<Element, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [e, next_child] = stack.back();
    const ElementList& points_to = points_to_[e];
    if (cached_[e]) {
      stack.pop_back();
      continue;
    }
    if (next_child < points_to.size()) {
      Element child = points_to.begin()[next_child++];
      if (!cached_[child]) stack.emplace_back(child, 0);
      continue;
    }
    LocationSet locs;
    if (points_to.empty()) {
      locs = LocationSet(e);
    } else {
      for (Element child : points_to) locs.insertAll(cache_[child]);
    }
    cache_[e] = std::move(locs);
    cached_[e] = true;
    cached_list_.push_back(e);
    stack.pop_back();
  }
  return cache_[root];
}

LocationSet MemoryDag::allContainedMemoryLocations(Element root) const {
  // Most values contain nothing (no list anywhere near them): their answer is their locations.
  const LocationSet& direct = memoryLocations(root);
  auto contains_something = [&](Element e) { return has_contents_[e]; };
  if (!contains_something(root) &&
      std::none_of(direct.elements().begin(), direct.elements().end(), contains_something)) {
    return direct;
  }
  LocationSet result;
  std::unordered_set<Element> seen;
  std::vector<Element> work{root};
  while (!work.empty()) {
    Element e = work.back();
    work.pop_back();
    if (!seen.insert(e).second) continue;
    const LocationSet& locs = memoryLocations(e);
    result.insertAll(locs);
    auto push_contents = [&](Element container) {
      if (!has_contents_[container]) return;
      const std::vector<Element>& contents = contained_.at(container);
      work.insert(work.end(), contents.begin(), contents.end());
    };
    for (Element loc : locs.elements()) push_contents(loc);
    push_contents(e);
  }
  return result;
}

}  // namespace ag::jit
