#include "engine/memory/allocator.h"

#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/error.h"
#include "engine/memory/thread_cache.h"

namespace ag {

namespace {

// Note [Data block alignment]
// Every data block is aligned to its size class up to a page (64 B .. 4 KiB), and larger blocks
// to a page. Two reasons:
// - 4K aliasing. A load whose address matches an in-flight store's in its low 12 bits waits
//   for that store. An elementwise kernel stores out[i] and then loads a[i + k]; if out starts a
//   little above a modulo 4096, which blocks carved one after another from the heap do, nearly
//   every load waits: an add whose output sat a little above its inputs (modulo 4096) took
//   several times as long as one at equal offsets. With the alignment above, same-sized arrays
//   start at the same offset modulo 4096 (out[i] aliases only a[i], which was loaded first), and a
//   smaller class's arrays start a multiple of their own size apart, so any alias lies past the
//   array's end.
// - Reproducible rounding: Eigen's vectorized reductions start at the first aligned element, so
//   the summation order of a buffer would otherwise depend on where malloc put it.
size_t block_alignment(size_t block_bytes) {
  size_t alignment = 64;  // the smallest power of two >= block_bytes, within [64, 4096]
  while (alignment < block_bytes && alignment < 4096) alignment *= 2;
  return alignment;
}

void* new_block(size_t bytes) {
  const size_t alignment = block_alignment(bytes);
  // aligned_alloc wants a multiple of the alignment; a zero-byte tensor still gets a block.
  const size_t rounded = std::max((bytes + alignment - 1) / alignment * alignment, alignment);
  void* block = std::aligned_alloc(alignment, rounded);
  if (!block) throw std::bad_alloc();
  return block;
}

void free_block(void* ptr) { std::free(ptr); }

// Freed blocks of up to 64 KiB, kept per thread and per power-of-two size class for the next
// tensor of that class. Small tensors are created and dropped constantly (every op's output,
// every gradient), and blocks of a few KiB miss glibc's own per-thread cache, so this halves the
// fixed cost of a small op. Bounded: a few blocks per class, freed when the thread ends
// (Note [Thread caches]).
class SmallBlockCache {
 public:
  static constexpr int kClasses = 11;  // 64 B .. 64 KiB
  static constexpr int kPerClass = 8;

  static bool fits(size_t bytes) { return bytes <= class_bytes_of(kClasses - 1); }
  static size_t class_bytes(size_t bytes) { return class_bytes_of(class_of(bytes)); }

  ~SmallBlockCache() {
    for (int c = 0; c < kClasses; ++c)
      for (int i = 0; i < count_[c]; ++i) free_block(blocks_[c][i]);
  }
  void* take(size_t bytes) {
    if (!fits(bytes)) return nullptr;
    const int c = class_of(bytes);
    return count_[c] ? blocks_[c][--count_[c]] : nullptr;
  }
  bool give(void* block, size_t bytes) {
    if (!fits(bytes)) return false;
    const int c = class_of(bytes);
    if (count_[c] == kPerClass) return false;
    blocks_[c][count_[c]++] = block;
    return true;
  }

 private:
  static size_t class_bytes_of(int c) { return size_t{64} << c; }
  // The smallest c with 64 << c >= bytes.
  static int class_of(size_t bytes) {
    return bytes <= 64 ? 0 : 64 - __builtin_clzll(static_cast<uint64_t>(bytes - 1)) - 6;
  }
  void* blocks_[kClasses][kPerClass];
  int count_[kClasses] = {};
};

class CpuAllocator final : public Allocator {
 public:
  CpuAllocator() {
    // glibc serves blocks above 128 KiB with fresh mmaps, so every large activation or gradient
    // of a training step would be page-faulted in again. Keep them in the heap for reuse.
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
  }

  // Data blocks are aligned as Note [Data block alignment] says; small blocks are recycled
  // through a per-thread cache, so aligned_alloc's cost is paid only by their first use.
  void* allocate(size_t bytes) override {
    SmallBlockCache* cache = thread_cache<SmallBlockCache>();
    void* block = cache ? cache->take(bytes) : nullptr;
    if (!block)
      block = new_block(SmallBlockCache::fits(bytes) ? SmallBlockCache::class_bytes(bytes) : bytes);
    stats().on_allocate(bytes);
    return block;
  }
  void deallocate(void* ptr, size_t bytes) override {
    SmallBlockCache* cache = thread_cache<SmallBlockCache>();
    if (!cache || !cache->give(ptr, bytes)) free_block(ptr);
    stats().on_free(bytes);
  }
  void copy_from_host(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void fill_zero(void* dst, size_t bytes) override {
    if (bytes) std::memset(dst, 0, bytes);
  }
};

}  // namespace

void* new_scratch_block(size_t bytes) { return new_block(bytes); }
void ScratchFree::operator()(void* block) const { free_block(block); }

Allocator* cpu_allocator() {
  static CpuAllocator cpu;
  return &cpu;
}

void fail_no_allocator(DeviceType type) {
  fail("no allocator for device ", to_string(Device{type, 0}),
       ": this build has no support for it");
}

void register_allocator(DeviceType type, Allocator* allocator) {
  detail::allocators.set(type, allocator);
}

}  // namespace ag
