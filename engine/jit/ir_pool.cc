#include "engine/jit/ir_pool.h"

#include <algorithm>
#include <cstdint>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// A released block is poisoned (past its free-list link) until it is handed out again, so that
// AddressSanitizer still reports a use of a destroyed Node or Value.
#define AG_IR_POOL_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define AG_IR_POOL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define AG_IR_POOL_POISON(p, n)
#define AG_IR_POOL_UNPOISON(p, n)
#endif

namespace ag::jit {

size_t IrPool::paddingBefore(const char* p, size_t alignment) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  return (alignment - address % alignment) % alignment;
}

IrPool::FreeList* IrPool::freeList(size_t size) {
  for (FreeList& list : free_lists_) {
    if (list.size == 0) list.size = size;
    if (list.size == size) return &list;
  }
  return nullptr;
}

void* IrPool::allocate(size_t size, size_t alignment) {
  size = rounded(size);
  FreeList* list = freeList(size);
  // A third size (the IR has two) comes from the heap, still aligned as any block may ask.
  if (list == nullptr) return ::operator new (size, std::align_val_t{kChunkAlign});
  if (list->head != nullptr) {
    // Blocks of one size were all carved with that size's alignment.
    FreeBlock* block = list->head;
    list->head = block->next;
    AG_IR_POOL_UNPOISON(block, size);
    return block;
  }
  const size_t padding = cursor_ == nullptr ? 0 : paddingBefore(cursor_, alignment);
  if (cursor_ == nullptr || static_cast<size_t>(limit_ - cursor_) < padding + size) {
    const size_t chunk = std::max(next_chunk_, size);
    chunks_.emplace_back(new (std::align_val_t{kChunkAlign}) char[chunk]);
    cursor_ = chunks_.back().get();  // aligned for any block
    limit_ = cursor_ + chunk;
    next_chunk_ = std::min(2 * next_chunk_, kLargestChunk);
  } else {
    cursor_ += padding;
  }
  char* block = cursor_;
  cursor_ = block + size;
  return block;
}

void IrPool::release(void* block, size_t size) {
  size = rounded(size);
  FreeList* list = freeList(size);
  if (list == nullptr) return ::operator delete (block, std::align_val_t{kChunkAlign});
  list->head = new (block) FreeBlock{list->head};
  AG_IR_POOL_POISON(static_cast<char*>(block) + sizeof(FreeBlock), size - sizeof(FreeBlock));
}

}  // namespace ag::jit
