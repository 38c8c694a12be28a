#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace ag {

// A tensor's sizes: a vector of int64_t that keeps up to kInline dimensions inside the object.
// Every op computes and copies output shapes; with std::vector each copy was a heap allocation,
// a noticeable part of a small op's fixed cost (Note [Pooled tensor metadata]). Shapes with more
// dimensions spill to the heap. The interface is the part of std::vector the code base uses, and
// a Shape converts to and from std::vector<int64_t>.
class Shape {
 public:
  static constexpr size_t kInline = 6;

  using value_type = int64_t;
  using size_type = size_t;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;

  Shape() = default;
  explicit Shape(size_t n, int64_t value = 0) { assign(n, value); }
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  template <typename It, typename = decltype(*std::declval<It>())>
  Shape(It first, It last) {
    assign(first, last);
  }
  Shape(const std::vector<int64_t>& dims) { assign(dims.begin(), dims.end()); }  // NOLINT
  Shape(const Shape& other) { copy_from(other); }
  Shape(Shape&& other) noexcept { take(other); }
  Shape& operator=(const Shape& other) {
    if (this != &other) copy_from(other);
    return *this;
  }
  Shape& operator=(Shape&& other) noexcept {
    if (this != &other) take(other);
    return *this;
  }
  operator std::vector<int64_t>() const { return {begin(), end()}; }  // NOLINT

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return heap_ ? heap_.get() : inline_; }
  const int64_t* data() const { return heap_ ? heap_.get() : inline_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  iterator begin() { return data(); }
  iterator end() { return data() + size_; }
  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size_; }
  int64_t& front() { return data()[0]; }
  int64_t front() const { return data()[0]; }
  int64_t& back() { return data()[size_ - 1]; }
  int64_t back() const { return data()[size_ - 1]; }

  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n <= capacity()) return;
    auto bigger = std::make_unique<int64_t[]>(n);
    std::copy(begin(), end(), bigger.get());
    heap_ = std::move(bigger);
    heap_capacity_ = n;
  }
  void resize(size_t n, int64_t value = 0) {
    reserve(n);
    if (n > size_) std::fill(data() + size_, data() + n, value);
    size_ = n;
  }
  void assign(size_t n, int64_t value) {
    clear();
    resize(n, value);
  }
  template <typename It>
  void assign(It first, It last) {
    const auto n = static_cast<size_t>(std::distance(first, last));
    clear();
    reserve(n);
    std::copy(first, last, data());
    size_ = n;
  }
  void push_back(int64_t d) {
    if (size_ == capacity()) reserve(2 * capacity());
    data()[size_++] = d;
  }
  void pop_back() { --size_; }
  iterator insert(const_iterator pos, int64_t d) {
    const size_t at = static_cast<size_t>(pos - begin());
    push_back(d);
    std::rotate(begin() + at, end() - 1, end());
    return begin() + at;
  }
  template <typename It>
  iterator insert(const_iterator pos, It first, It last) {
    const size_t at = static_cast<size_t>(pos - begin()), old = size_;
    for (; first != last; ++first) push_back(*first);
    std::rotate(begin() + at, begin() + old, end());
    return begin() + at;
  }
  iterator erase(const_iterator first, const_iterator last) {
    const size_t at = static_cast<size_t>(first - begin());
    const size_t n = static_cast<size_t>(last - first);
    std::copy(begin() + at + n, end(), begin() + at);
    size_ -= n;
    return begin() + at;
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }

  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.size_ != b.size_) return false;
    // A plain loop: std::equal becomes a memcmp call, slower for a handful of dims.
    for (size_t i = 0; i < a.size_; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }
  friend bool operator<(const Shape& a, const Shape& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  size_t capacity() const { return heap_ ? heap_capacity_ : kInline; }
  // Inline shapes copy the whole (fixed-size) inline array: a few vector moves, no loop.
  void copy_from(const Shape& other) {
    if (other.heap_) {
      copy_spilled(other);
      return;
    }
    heap_.reset();
    std::memcpy(inline_, other.inline_, sizeof inline_);
    size_ = other.size_;
  }
  // Out of line, so that copy_from() stays small enough to be inlined where shapes are copied
  // (every op output's metadata, every recorded input): with assign() inside it, each copy was a
  // call.
  [[gnu::noinline]] void copy_spilled(const Shape& other) { assign(other.begin(), other.end()); }
  void take(Shape& other) {
    if (other.heap_) {
      heap_ = std::move(other.heap_);
      heap_capacity_ = other.heap_capacity_;
      size_ = other.size_;
    } else {
      copy_from(other);
    }
    other.size_ = 0;
  }

  size_t size_ = 0;
  int64_t inline_[kInline] = {};     // zeroed, so that copy_from copies only initialized values
  std::unique_ptr<int64_t[]> heap_;  // set once the shape has outgrown inline_
  size_t heap_capacity_ = 0;
};

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Whether a layout reads some element at several indices, as far as PyTorch's
// has_internal_overlap can tell: a stride of 0 on a dim of size > 1 (an expanded tensor).
inline bool has_internal_overlap(const Shape& sizes, const Shape& strides) {
  if (numel(sizes) == 0) return false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] > 1 && strides[i] == 0) return true;
  }
  return false;
}

// "[2, 3]" — used in every error message that names shapes.
inline std::string to_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

}  // namespace ag
