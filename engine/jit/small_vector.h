// SmallVector<T, N>: a vector whose first N elements live inside the object itself, for the IR's
// per-node and per-value lists (Note [IR memory layout] in ir.h). Only what those lists need:
// trivially copyable elements, no copies of the vector itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <type_traits>

namespace ag::jit {

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector moves its elements with memcpy");
  static_assert(N > 0);

 public:
  SmallVector() = default;
  SmallVector(const SmallVector&) = delete;
  SmallVector& operator=(const SmallVector&) = delete;
  ~SmallVector() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }

  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& at(size_t i) { return data_[checked(i)]; }
  const T& at(size_t i) const { return data_[checked(i)]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void push_back(const T& v) {
    if (size_ == capacity_) grow(2 * capacity_);
    data_[size_++] = v;
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n > capacity_) grow(n);
  }
  // Removes the element at `pos`, shifting the ones after it down.
  T* erase(T* pos) {
    std::memmove(pos, pos + 1, static_cast<size_t>(end() - pos - 1) * sizeof(T));
    --size_;
    return pos;
  }

 private:
  size_t checked(size_t i) const {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return i;
  }
  void grow(size_t n) {
    T* bigger = static_cast<T*>(::operator new(n * sizeof(T)));
    if (size_ > 0) std::memcpy(bigger, data_, size_ * sizeof(T));
    release();
    data_ = bigger;
    capacity_ = static_cast<uint32_t>(n);
  }
  void release() {
    if (data_ != inline_) ::operator delete(data_);
  }

  T* data_ = inline_;
  uint32_t size_ = 0;
  uint32_t capacity_ = N;
  T inline_[N];
};

}  // namespace ag::jit
