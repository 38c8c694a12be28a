#include "cuda/cuda_allocator.h"

#include <cuda_runtime.h>

#include "cuda/check.h"
#include "cuda/cuda.h"
#include "engine/error.h"

namespace ag::cuda {

void* CachingAllocator::take_cached(size_t rounded) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = free_blocks_.find(rounded);
  if (it == free_blocks_.end() || it->second.empty()) return nullptr;
  void* p = it->second.back();
  it->second.pop_back();
  cached_ -= rounded;
  return p;
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
  }
  stats().on_allocate(bytes);
  return p;
}

void CachingAllocator::deallocate(void* ptr, size_t bytes) {
  stats().on_free(bytes);
  const size_t rounded = round_up(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  free_blocks_[rounded].push_back(ptr);
  cached_ += rounded;
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
  if (bytes) check(cudaMemsetAsync(dst, 0, bytes), "fill_zero");
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
