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
Cache*& thread_cache_slot() {
  thread_local Cache* cache = nullptr;
  return cache;
}

// Creates the calling thread's cache, or returns null if the thread is shutting down. Kept out
// of line so that thread_cache() stays a TLS load and a test.
template <typename Cache>
[[gnu::noinline]] Cache* make_thread_cache() {
  thread_local bool gone = false;
  if (gone) return nullptr;
  struct Owner {
    ~Owner() {
      delete thread_cache_slot<Cache>();
      thread_cache_slot<Cache>() = nullptr;
      gone = true;
    }
  };
  thread_local Owner owner;
  return thread_cache_slot<Cache>() = new Cache;
}

template <typename Cache>
inline Cache* thread_cache() {
  Cache* cache = thread_cache_slot<Cache>();
  return cache ? cache : make_thread_cache<Cache>();
}

}  // namespace ag
