// The points-to graph underneath AliasDb.
//
// An element stands for "some memory a value may refer to". Elements point to
// other elements (a view's element points to its base's element) and may
// contain elements (a list's element contains what was put into the list).
// An element that points nowhere is a *memory location*; the memory locations
// an element may refer to are the ones reachable through points-to edges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ag::jit {

using Element = uint32_t;

// A sorted set of memory locations. Most sets hold one location (a value's own memory): that
// one is kept inline, so making, copying and reading such a set touches no heap memory.
class LocationSet {
 public:
  class Range {
   public:
    Range(const Element* begin, const Element* end) : begin_(begin), end_(end) {}
    const Element* begin() const { return begin_; }
    const Element* end() const { return end_; }

   private:
    const Element* begin_;
    const Element* end_;
  };

  LocationSet() = default;
  explicit LocationSet(Element single) : size_(1), single_(single) {}
  explicit LocationSet(std::vector<Element> sorted) { assign(std::move(sorted)); }
  bool empty() const { return size_ == 0; }
  bool intersects(const LocationSet& other) const;
  void insertAll(const LocationSet& other);
  Range elements() const { return Range(data(), data() + size_); }

 private:
  const Element* data() const { return size_ <= 1 ? &single_ : many_.data(); }
  void assign(std::vector<Element> sorted);

  size_t size_ = 0;
  Element single_ = 0;         // the location, when size_ == 1
  std::vector<Element> many_;  // the locations, when size_ > 1
};

class MemoryDag {
 public:
  Element makeFreshElement();
  void reserve(size_t elements);
  void makePointerTo(Element from, Element to);
  void addToContainedElements(Element contained, Element container);
  size_t size() const { return elements_.size(); }

  const LocationSet& memoryLocations(Element e) const;
  // memoryLocations(e) plus, recursively, the memory locations of whatever is
  // contained in those locations (reading a list reads its elements).
  LocationSet allContainedMemoryLocations(Element e) const;

 private:
  struct Entry {
    std::vector<Element> points_to;
    std::vector<Element> contained;
    bool pointed_to = false;  // some element points here
  };
  void invalidateCacheFor(Element from);

  std::vector<Entry> elements_;
  // element -> contains something (a dense copy of !contained.empty(): most queries only ask this).
  std::vector<bool> has_contents_;
  // Memory locations per element, computed on demand. Edges are only added
  // while an AliasDb is built or when a brand-new element is attached, so the
  // cache rarely needs to be thrown away.
  mutable std::vector<LocationSet> cache_;
  mutable std::vector<bool> cached_;
  mutable std::vector<Element> cached_list_;  // what to reset: clearing costs what caching did
};

}  // namespace ag::jit
