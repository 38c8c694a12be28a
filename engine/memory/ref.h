#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace ag {

// Note [Intrusive reference counts]
// TensorImpl and Storage carry their own reference count instead of living in a std::shared_ptr
// control block. Every op creates one of each and nearly always drops them unshared, so the
// release path matters: Ref's is an acquire load that finds the count at 1 followed by a direct,
// non-virtual delete. A count of 1 held by the releasing Ref means no other Ref exists, so no
// other thread can add one meanwhile; a shared object takes the usual atomic decrement.
// There are no weak references. The one back-reference, a leaf's AccumulateGrad pointing at the
// leaf, is a plain pointer that the leaf clears as it dies (engine/accumulate_grad.h), and
// nothing may take a Ref through such a pointer.
class RefCounted {
 protected:
  RefCounted() = default;
  ~RefCounted() = default;

 public:
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;

 private:
  template <typename T>
  friend class Ref;
  std::atomic<uint32_t> refs_{1};  // a new object is owned by the Ref that make() returns
};

// An owning pointer to a RefCounted T, like std::shared_ptr without weak references.
template <typename T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}  // NOLINT: a null Ref converts like a null shared_ptr

  template <typename... Args>
  static Ref make(Args&&... args) {
    return Ref(new T(std::forward<Args>(args)...));
  }

  Ref(const Ref& other) : p_(other.p_) {
    if (p_) p_->refs_.fetch_add(1, std::memory_order_relaxed);
  }
  Ref(Ref&& other) noexcept : p_(std::exchange(other.p_, nullptr)) {}
  Ref& operator=(Ref other) noexcept {
    std::swap(p_, other.p_);
    return *this;
  }
  ~Ref() {
    if (p_) release(p_);  // moved-from and null Refs, the common case in return paths, stop here
  }

  T* get() const { return p_; }
  T& operator*() const { return *p_; }
  T* operator->() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }
  friend bool operator==(const Ref& a, const Ref& b) { return a.p_ == b.p_; }
  friend bool operator!=(const Ref& a, const Ref& b) { return a.p_ != b.p_; }
  friend bool operator==(const Ref& a, std::nullptr_t) { return a.p_ == nullptr; }
  friend bool operator!=(const Ref& a, std::nullptr_t) { return a.p_ != nullptr; }
  // References held, for tests.
  uint32_t use_count() const { return p_ ? p_->refs_.load(std::memory_order_relaxed) : 0; }

 private:
  explicit Ref(T* adopted) : p_(adopted) {}  // takes over the count of 1 a new object starts with
  static void release(T* p) {
    if (p->refs_.load(std::memory_order_acquire) == 1 ||
        p->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete p;
    }
  }
  T* p_ = nullptr;
};

}  // namespace ag
