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
// nothing may take a Ref through such a pointer, with one exception, Ref::upgrade below.
//
// Note [Upgrading a plain pointer]
// A post-accumulate-grad hook is handed its leaf, which the AccumulateGrad knows only by its plain
// pointer. Taking a Ref through it is safe only if a dying object can be told from a live one,
// and the release path above cannot tell: it deletes at a count of 1 without writing the count.
// So an object that will be upgraded is first marked (mark_upgradable, once, while a Ref to it is
// held): the mark is a high bit of the count, so a marked object never matches the fast path's
// `== 1`, always dies by the decrement, and reaches a count of 0 before it is deleted. upgrade()
// adds a reference only to a count above 0. The caller must also keep the memory from being
// freed meanwhile: the AccumulateGrad holds its mutex, which the leaf's destructor takes before
// it returns. Unmarked objects pay nothing; the shared path pays one mask.
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
  static constexpr uint32_t kUpgradable = 1u << 31;  // the mark; the count is the other bits
  static constexpr uint32_t kCount = kUpgradable - 1;
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
  // References held (Tensor's checks that nothing else holds a tensor, and tests).
  uint32_t use_count() const {
    return p_ ? p_->refs_.load(std::memory_order_relaxed) & RefCounted::kCount : 0;
  }

  // Note [Upgrading a plain pointer]: marks the object this Ref holds as one that upgrade() may
  // be called on. Never undone.
  void mark_upgradable() const {
    p_->refs_.fetch_or(RefCounted::kUpgradable, std::memory_order_relaxed);
  }
  bool upgradable() const {
    return p_ && (p_->refs_.load(std::memory_order_relaxed) & RefCounted::kUpgradable) != 0;
  }
  // A Ref to the marked object `p` if it is still alive, else null. `p`'s memory must stay
  // allocated for the call (the caller's lock keeps its destructor from returning).
  static Ref upgrade(T* p) {
    uint32_t c = p->refs_.load(std::memory_order_acquire);
    do {
      if ((c & RefCounted::kCount) == 0) return nullptr;  // dying: its last Ref is gone
    } while (!p->refs_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel,
                                             std::memory_order_acquire));
    return Ref(p);
  }

 private:
  explicit Ref(T* adopted) : p_(adopted) {}  // takes over the count of 1 a new object starts with
  static void release(T* p) {
    if (p->refs_.load(std::memory_order_acquire) == 1 ||
        (p->refs_.fetch_sub(1, std::memory_order_acq_rel) & RefCounted::kCount) == 1) {
      delete p;
    }
  }
  T* p_ = nullptr;
};

}  // namespace ag
