#pragma once

#include <cstddef>
#include <new>

#include "engine/memory/thread_cache.h"

namespace ag {

// Note [Pooled tensor metadata]
// Every op output is a TensorImpl and a Storage, each one heap block, and every dropped tensor
// frees both: on a 1000-element add that was a third of the op's cost. PooledObject serves
// those blocks from a per-thread free list of blocks of one size (Note [Thread caches]),
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

// The pool for objects of type T: blocks of sizeof(T) rounded up to 16 bytes (so that a block
// can hold the free-list link). A function, not a constant: T may still be incomplete where the
// pool is named (PooledObject<T> as T's base).
template <typename T>
constexpr size_t pool_block_bytes() {
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  return (sizeof(T) + 15) / 16 * 16;
}

// A base class whose objects are allocated from the BlockPool of their size: `new T` and
// `delete` then pop and push a block of the calling thread's pool. Arrays and sizes other than
// sizeof(T) use the heap.
template <typename T>
struct PooledObject {
  static void* operator new(size_t bytes) {
    if (!kPoolObjects || bytes != sizeof(T)) return ::operator new(bytes);
    return BlockPool<pool_block_bytes<T>()>::allocate();
  }
  static void operator delete(void* p, size_t bytes) {
    if (!kPoolObjects || bytes != sizeof(T)) {
      ::operator delete(p);
    } else {
      BlockPool<pool_block_bytes<T>()>::deallocate(p);
    }
  }
};

// The same for objects owned by a std::shared_ptr: std::allocate_shared<T>(PoolAllocator<T>(),
// ...) puts the object and its control block in one block of the calling thread's pool (the
// standard library rebinds the allocator to that combined type). Arrays use the heap.
template <typename T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT: rebinding, as allocators do

  T* allocate(size_t n) {
    if (!kPoolObjects || n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(BlockPool<pool_block_bytes<T>()>::allocate());
  }
  void deallocate(T* p, size_t n) {
    if (!kPoolObjects || n != 1) {
      ::operator delete(p);
    } else {
      BlockPool<pool_block_bytes<T>()>::deallocate(p);
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
