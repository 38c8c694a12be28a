#include "engine/jit/memory_dag.h"

#include <algorithm>
#include <iterator>
#include <unordered_set>

namespace ag::jit {

void LocationSet::assign(std::vector<Element> sorted) {
  size_ = sorted.size();
  if (size_ <= 1) {
    single_ = sorted.empty() ? 0 : sorted[0];
    many_.clear();
  } else {
    many_ = std::move(sorted);
  }
}

bool LocationSet::intersects(const LocationSet& other) const {
  const Element* a = data();
  const Element* a_end = a + size_;
  const Element* b = other.data();
  const Element* b_end = b + other.size_;
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
  merged.reserve(size_ + other.size_);
  std::set_union(data(), data() + size_, other.data(), other.data() + other.size_,
                 std::back_inserter(merged));
  assign(std::move(merged));
}

Element MemoryDag::makeFreshElement() {
  elements_.emplace_back();
  has_contents_.push_back(false);
  cache_.emplace_back();
  cached_.push_back(false);
  return static_cast<Element>(elements_.size() - 1);
}

void MemoryDag::reserve(size_t elements) {
  elements_.reserve(elements);
  has_contents_.reserve(elements);
  cache_.reserve(elements);
  cached_.reserve(elements);
}

void MemoryDag::invalidateCacheFor(Element from) {
  if (!elements_[from].pointed_to) {
    // Nothing points at `from`: only its own answer changes.
    cached_[from] = false;
  } else {
    for (Element e : cached_list_) cached_[e] = false;
    cached_list_.clear();
  }
}

void MemoryDag::makePointerTo(Element from, Element to) {
  if (from == to) return;
  auto& pts = elements_[from].points_to;
  if (std::find(pts.begin(), pts.end(), to) != pts.end()) return;
  pts.push_back(to);
  elements_[to].pointed_to = true;
  invalidateCacheFor(from);
}

void MemoryDag::addToContainedElements(Element contained, Element container) {
  auto& c = elements_[container].contained;
  if (std::find(c.begin(), c.end(), contained) == c.end()) c.push_back(contained);
  has_contents_[container] = true;
}

const LocationSet& MemoryDag::memoryLocations(Element root) const {
  if (cached_[root]) return cache_[root];
  // Iterative post-order walk (chains of views can be very long).
  std::vector<std::pair<Element, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [e, next_child] = stack.back();
    const Entry& entry = elements_[e];
    if (cached_[e]) {
      stack.pop_back();
      continue;
    }
    if (next_child < entry.points_to.size()) {
      Element child = entry.points_to[next_child++];
      if (!cached_[child]) stack.emplace_back(child, 0);
      continue;
    }
    LocationSet locs;
    if (entry.points_to.empty()) {
      locs = LocationSet(e);
    } else {
      for (Element child : entry.points_to) locs.insertAll(cache_[child]);
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
    for (Element loc : locs.elements()) {
      for (Element c : elements_[loc].contained) work.push_back(c);
    }
    for (Element c : elements_[e].contained) work.push_back(c);
  }
  return result;
}

}  // namespace ag::jit
