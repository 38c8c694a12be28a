#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <stdexcept>
#include <utility>

namespace ag {

// Note [Small vectors]
// A vector that keeps up to N elements inside the object and moves them to the heap beyond that
// (LLVM's and PyTorch's SmallVector). A node's per-input lists (its edges, its inputs' shapes,
// its saved values, its outputs' metadata) hold one to three entries on nearly every op: as
// std::vectors they were four heap allocations per recorded op, about a fifth of the engine's
// fixed cost on a tiny graph. The JIT IR keeps its nodes' and values' lists in them too (Note
// [IR memory layout] in engine/jit/ir.h). The interface is the part of std::vector the code base
// uses.
template <typename T, size_t N>
class SmallVector {
 public:
  static_assert(N > 0);
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

  using value_type = T;
  using size_type = size_t;
  using reference = T&;
  using const_reference = const T&;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() = default;
  explicit SmallVector(size_t n) { resize(n); }
  SmallVector(std::initializer_list<T> values) { append(values.begin(), values.end()); }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  SmallVector(It first, It last) {
    append(first, last);
  }
  SmallVector(const SmallVector& other) { append(other.begin(), other.end()); }
  SmallVector(SmallVector&& other) noexcept { take(other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      clear();
      append(other.begin(), other.end());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      clear();
      free_heap();
      take(other);
    }
    return *this;
  }
  ~SmallVector() {
    clear();
    free_heap();
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  iterator begin() { return data_; }
  iterator end() { return data_ + size_; }
  const_iterator begin() const { return data_; }
  const_iterator end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  T& at(size_t i) { return data_[checked(i)]; }
  const T& at(size_t i) const { return data_[checked(i)]; }

  void reserve(size_t n) {
    if (n > capacity_) move_to_heap(n);
  }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) {
      T value(std::forward<Args>(args)...);  // made first: the arguments may be our elements
      move_to_heap(2 * capacity_);
      return *new (data_ + size_++) T(std::move(value));
    }
    return *new (data_ + size_++) T(std::forward<Args>(args)...);
  }
  void push_back(const T& value) { emplace_back(value); }
  void push_back(T&& value) { emplace_back(std::move(value)); }
  void pop_back() { data_[--size_].~T(); }
  void resize(size_t n) {
    reserve(n);
    while (size_ < n) new (data_ + size_++) T();
    while (size_ > n) pop_back();
  }
  void clear() {
    std::destroy(data_, data_ + size_);
    size_ = 0;
  }
  // Removes the element at `pos`, moving the ones after it down.
  iterator erase(iterator pos) {
    std::move(pos + 1, end(), pos);
    pop_back();
    return pos;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator!=(const SmallVector& a, const SmallVector& b) { return !(a == b); }

 private:
  size_t checked(size_t i) const {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return i;
  }
  T* inline_data() { return reinterpret_cast<T*>(inline_); }
  bool on_heap() const { return data_ != reinterpret_cast<const T*>(inline_); }

  template <typename It>
  void append(It first, It last) {
    reserve(size_ + static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) new (data_ + size_++) T(*first);
  }
  void move_to_heap(size_t n) {
    T* bigger = static_cast<T*>(::operator new(n * sizeof(T)));
    std::uninitialized_move(begin(), end(), bigger);
    std::destroy(begin(), end());
    free_heap();
    data_ = bigger;
    capacity_ = n;
  }
  void free_heap() {
    if (on_heap()) ::operator delete(data_);
    data_ = inline_data();
    capacity_ = N;
  }
  // Into an empty vector with inline storage: a heap buffer changes hands, inline elements move.
  void take(SmallVector& other) {
    if (other.on_heap()) {
      data_ = std::exchange(other.data_, other.inline_data());
      capacity_ = std::exchange(other.capacity_, N);
      size_ = std::exchange(other.size_, 0);
    } else {
      std::uninitialized_move(other.begin(), other.end(), data_);
      size_ = other.size_;
      other.clear();
    }
  }

  T* data_ = inline_data();
  size_t size_ = 0;
  size_t capacity_ = N;
  alignas(T) unsigned char inline_[N * sizeof(T)];
};

}  // namespace ag
