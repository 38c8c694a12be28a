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
#include <unordered_map>
#include <vector>

namespace ag::jit {

using Element = uint32_t;

// A short list of elements in 16 bytes: one element is kept inline, more on the heap. A graph has
// as many elements as values and most point to at most one other and hold one memory location,
// so keeping one inline is what keeps the per-element tables small (Note [Compact alias tables]).
class ElementList {
 public:
  ElementList() = default;
  ElementList(const ElementList& other) { assign(other.begin(), other.end()); }
  ElementList(ElementList&& other) noexcept { steal(other); }
  ElementList& operator=(const ElementList& other);
  ElementList& operator=(ElementList&& other) noexcept;
  ~ElementList() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Element* begin() const { return onHeap() ? many_ : &one_; }
  const Element* end() const { return begin() + size_; }
  void push_back(Element e);
  void assign(const Element* first, const Element* last);

 private:
  bool onHeap() const { return capacity_ > 1; }
  Element* data() { return onHeap() ? many_ : &one_; }
  void reserve(uint32_t capacity);
  void release();
  void steal(ElementList& other) noexcept;

  uint32_t size_ = 0;
  uint32_t capacity_ = 1;  // 1: the element (if any) is inline in one_
  union {
    Element one_ = 0;
    Element* many_;
  };
};

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
  explicit LocationSet(Element single) { locations_.push_back(single); }
  explicit LocationSet(const std::vector<Element>& sorted) {
    locations_.assign(sorted.data(), sorted.data() + sorted.size());
  }
  bool empty() const { return locations_.empty(); }
  bool intersects(const LocationSet& other) const;
  void insertAll(const LocationSet& other);
  Range elements() const { return Range(locations_.begin(), locations_.end()); }

 private:
  ElementList locations_;
};

class MemoryDag {
 public:
  Element makeFreshElement();
  void reserve(size_t elements);
  void makePointerTo(Element from, Element to);
  void addToContainedElements(Element contained, Element container);
  size_t size() const { return points_to_.size(); }

  const LocationSet& memoryLocations(Element e) const;
  // memoryLocations(e) plus, recursively, the memory locations of whatever is
  // contained in those locations (reading a list reads its elements).
  LocationSet allContainedMemoryLocations(Element e) const;

 private:
  void invalidateCacheFor(Element from);

  // Per element (Note [Compact alias tables]): what it points to, whether anything points to it,
  // whether it contains anything. Only lists contain elements: their contents sit in a map.
  std::vector<ElementList> points_to_;
  std::vector<bool> pointed_to_;
  std::vector<bool> has_contents_;
  std::unordered_map<Element, std::vector<Element>> contained_;
  // Memory locations per element, computed on demand. Edges are only added
  // while an AliasDb is built or when a brand-new element is attached, so the
  // cache rarely needs to be thrown away.
  mutable std::vector<LocationSet> cache_;
  mutable std::vector<bool> cached_;
  mutable std::vector<Element> cached_list_;  // what to reset: clearing costs what caching did
};

}  // namespace ag::jit
