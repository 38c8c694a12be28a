#include "cuda/cuda_allocator.h"

#include <cuda_runtime.h>

#include "cuda/check.h"
#include "cuda/cuda.h"
#include "cuda/stream.h"
#include "engine/error.h"

namespace ag::cuda {

struct CachingAllocator::Pool {
  std::unordered_map<size_t, std::vector<void*>> free_blocks;  // by rounded size
  std::unordered_map<void*, size_t> blocks;                    // every block, by rounded size
};

namespace {

// The last free block of `rounded` bytes in `free_blocks`, taken off its list; nullptr if none.
void* take_free(std::unordered_map<size_t, std::vector<void*>>& free_blocks, size_t rounded) {
  auto it = free_blocks.find(rounded);
  if (it == free_blocks.end() || it->second.empty()) return nullptr;
  void* p = it->second.back();
  it->second.pop_back();
  return p;
}

}  // namespace

// Under capture, the pool's own free blocks first, then the cache's (which then join the pool).
void* CachingAllocator::take_cached(size_t rounded) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capturing_ != nullptr) {
    if (void* p = take_free(capturing_->free_blocks, rounded)) return p;
  }
  void* p = take_free(free_blocks_, rounded);
  if (p == nullptr) return nullptr;
  cached_ -= rounded;
  join_capturing_pool(p, rounded);
  return p;
}

void CachingAllocator::join_capturing_pool(void* p, size_t rounded) {
  if (capturing_ == nullptr) return;
  capturing_->blocks[p] = rounded;
  pool_of_[p] = capturing_;
}

void* CachingAllocator::allocate(size_t bytes) {
  const size_t rounded = round_up(bytes);
  void* p = take_cached(rounded);
  if (p == nullptr) {
    cudaError_t e = cudaMalloc(&p, rounded);
    if (e == cudaErrorMemoryAllocation) {  // give the cache back and try once more
      cudaGetLastError();
      empty_cache();
      e = cudaMalloc(&p, rounded);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      fail("CUDA allocation of ", bytes, " bytes failed: ", cudaGetErrorName(e), " (",
           cudaGetErrorString(e), "); live ", stats().live_bytes(), " bytes, ", cached_bytes(),
           " cached");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    join_capturing_pool(p, rounded);
  }
  stats().on_allocate(bytes);
  return p;
}

void CachingAllocator::deallocate(void* ptr, size_t bytes) {
  stats().on_free(bytes);
  const size_t rounded = round_up(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  auto owner = pool_of_.find(ptr);
  if (owner != pool_of_.end()) {
    owner->second->free_blocks[rounded].push_back(ptr);
    return;
  }
  free_blocks_[rounded].push_back(ptr);
  cached_ += rounded;
}

CachingAllocator::Pool* CachingAllocator::begin_pool() {
  std::lock_guard<std::mutex> lock(mutex_);
  AG_CHECK(capturing_ == nullptr, "cuda: a graph is already being captured");
  capturing_ = new Pool();
  return capturing_;
}

void CachingAllocator::end_pool() {
  std::lock_guard<std::mutex> lock(mutex_);
  capturing_ = nullptr;
}

void CachingAllocator::release_pool(Pool* pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capturing_ == pool) capturing_ = nullptr;
  for (const auto& [ptr, rounded] : pool->blocks) pool_of_.erase(ptr);
  for (auto& [rounded, blocks] : pool->free_blocks) {
    for (void* p : blocks) free_blocks_[rounded].push_back(p);
    cached_ += rounded * blocks.size();
  }
  delete pool;
}

int64_t CachingAllocator::pool_bytes(const Pool* pool) const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t total = 0;
  for (const auto& entry : pool->blocks) total += static_cast<int64_t>(entry.second);
  return total;
}

void CachingAllocator::copy_from_host(void* dst, const void* src, size_t bytes) {
  // cudaMemcpyDefault: the source may be host memory or another buffer of this device.
  if (bytes) check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "copy to device");
}

void CachingAllocator::copy_to_host(void* dst, const void* src, size_t bytes) {
  // Synchronous: waits for the kernels that produce src.
  if (bytes) check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "copy to host");
}

void CachingAllocator::fill_zero(void* dst, size_t bytes) {
  if (bytes) check(cudaMemsetAsync(dst, 0, bytes, stream()), "fill_zero");
}

int64_t CachingAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(cached_);
}

void CachingAllocator::empty_cache() {
  std::unordered_map<size_t, std::vector<void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks.swap(free_blocks_);
    cached_ = 0;
  }
  for (auto& entry : blocks) {
    for (void* p : entry.second) cudaFree(p);  // an error here leaves nothing to recover
  }
}

CachingAllocator& caching_allocator() {
  static CachingAllocator* instance = new CachingAllocator();
  return *instance;
}

int64_t cached_bytes() { return caching_allocator().cached_bytes(); }
void empty_cache() { caching_allocator().empty_cache(); }

void* scratch_allocate(size_t bytes) { return caching_allocator().allocate(bytes); }
void scratch_free(void* ptr, size_t bytes) { caching_allocator().deallocate(ptr, bytes); }

}  // namespace ag::cuda
