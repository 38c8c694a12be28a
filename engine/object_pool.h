#pragma once

#include <cstddef>
#include <new>

#include "engine/thread_cache.h"

namespace ag {

// Note [Pooled tensor metadata]
// Every op output is a TensorImpl and a Storage, each one make_shared block, and every dropped
// tensor frees both: on a 1000-element add that is a third of the op's cost. PoolAllocator
// serves those blocks from a per-thread free list of blocks of one size (Note [Thread caches]),
// so creating and dropping a tensor's metadata is a pointer pop and push. A block may be freed
// on another thread than the one that allocated it: it then joins that thread's list, which is
// fine for plain heap memory. Each list is bounded, and freed when its thread ends.
// Under AddressSanitizer the pool is bypassed, so a use after free is still reported.
template <size_t Bytes>
class BlockPool {
 public:
  static constexpr size_t kMaxBlocks = 1024;

  ~BlockPool() {
    while (head_) ::operator delete(pop());
  }

  static void* allocate() {
    BlockPool* pool = thread_cache<BlockPool>();
    if (pool && pool->head_) return pool->pop();
    return ::operator new(Bytes);
  }
  // Blocks cached for the calling thread.
  static size_t cached_blocks() {
    BlockPool* pool = thread_cache<BlockPool>();
    return pool ? pool->count_ : 0;
  }
  static void deallocate(void* block) {
    BlockPool* pool = thread_cache<BlockPool>();
    if (pool && pool->count_ < kMaxBlocks) {
      pool->push(block);
    } else {
      ::operator delete(block);
    }
  }

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  static_assert(Bytes >= sizeof(FreeBlock));

  void* pop() {
    FreeBlock* b = head_;
    head_ = b->next;
    --count_;
    return b;
  }
  void push(void* block) {
    auto* b = static_cast<FreeBlock*>(block);
    b->next = head_;
    head_ = b;
    ++count_;
  }

  FreeBlock* head_ = nullptr;
  size_t count_ = 0;
};

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kPoolObjects = false;
#else
inline constexpr bool kPoolObjects = true;
#endif

// A standard allocator for std::allocate_shared: single objects come from the BlockPool of
// their size rounded up to 16 bytes (so the pool's blocks can hold its free-list link).
template <typename T>
struct PoolAllocator {
  using value_type = T;
  static constexpr size_t kBlockBytes = (sizeof(T) + 15) / 16 * 16;
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}

  T* allocate(size_t n) {
    if (!kPoolObjects || n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(BlockPool<kBlockBytes>::allocate());
  }
  void deallocate(T* p, size_t n) {
    if (!kPoolObjects || n != 1) {
      ::operator delete(p);
    } else {
      BlockPool<kBlockBytes>::deallocate(p);
    }
  }
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const PoolAllocator<U>&) const {
    return false;
  }
};

}  // namespace ag
