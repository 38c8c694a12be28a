#pragma once

namespace ag {

// Note [Thread caches]
// The allocator's small data blocks and the pooled TensorImpl/Storage blocks are recycled
// through caches that belong to one thread, so taking and returning a block needs no lock.
// Tensors can outlive their thread's cache: one held by a static object is freed after the
// thread's thread_local objects are destroyed. thread_cache<Cache>() therefore returns null once
// the calling thread is shutting down, and callers then go straight to the heap. The plain
// pointer and flag need no destruction, so reading them at that point is safe.
template <typename Cache>
Cache* thread_cache() {
  thread_local Cache* cache = nullptr;
  thread_local bool gone = false;
  if (cache == nullptr && !gone) {
    struct Owner {
      ~Owner() {
        delete cache;
        cache = nullptr;
        gone = true;
      }
    };
    thread_local Owner owner;
    cache = new Cache;
  }
  return cache;
}

}  // namespace ag
