// IrPool: where a graph and its subgraphs get the memory of their Nodes and Values (Note [IR
// memory layout] in ir.h). Blocks are carved one after the other from chunks, so the nodes of a
// graph lie together in the order they were made, whatever the state of the process's heap;
// a released block goes on a free list of its size and is the next one handed out. Chunks are
// returned when the pool goes, with the last graph that uses it. Not thread-safe: like the rest
// of a graph, a pool is changed by one thread at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace ag::jit {

class IrPool {
 public:
  IrPool() = default;
  IrPool(const IrPool&) = delete;
  IrPool& operator=(const IrPool&) = delete;

  // `alignment`: a power of two, at most kChunkAlign. A Node asks for a cache line's alignment
  // (Note [IR memory layout]).
  void* allocate(size_t size, size_t alignment = kAlign);
  void release(void* block, size_t size);

  // Keeps another pool's chunks alive as long as this one (a graph built apart becomes a
  // subgraph: its nodes stay where they are, and later go back to this pool's free lists).
  void keepAlive(std::shared_ptr<void> other) { kept_.push_back(std::move(other)); }

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  struct FreeList {
    size_t size = 0;
    FreeBlock* head = nullptr;
  };
  static constexpr size_t kAlign = alignof(std::max_align_t);
  static constexpr size_t kChunkAlign = 64;
  static constexpr size_t kFirstChunk = size_t{1} << 10;  // a small graph stays small
  static constexpr size_t kLargestChunk = size_t{1} << 16;
  static size_t rounded(size_t size) { return (size + kAlign - 1) / kAlign * kAlign; }
  static size_t paddingBefore(const char* p, size_t alignment);  // to the next aligned byte
  FreeList* freeList(size_t size);  // nullptr for a third size (then blocks come from the heap)

  FreeList free_lists_[2];  // the IR has two sizes of block: Node and Value
  struct ChunkDeleter {
    void operator()(char* chunk) const {
      ::operator delete[](chunk, std::align_val_t{kChunkAlign});
    }
  };
  std::vector<std::unique_ptr<char[], ChunkDeleter>> chunks_;
  char* cursor_ = nullptr;
  char* limit_ = nullptr;
  size_t next_chunk_ = kFirstChunk;
  std::vector<std::shared_ptr<void>> kept_;
};

}  // namespace ag::jit
