#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace ag {

// A T borrowed from this thread's free list for one scope, cleared with T::clear() and put back
// at its end, so the next borrower reuses its memory. The engine keeps its per-call containers
// this way: on small graphs, allocating them afresh was a large part of its overhead. A scope
// nested in another (a custom Function calling grad() inside backward) simply takes a second T.
template <typename T>
class ScratchLease {
 public:
  ScratchLease() {
    std::vector<std::unique_ptr<T>>& pool = free_list();
    if (pool.empty()) {
      scratch_ = std::make_unique<T>();
    } else {
      scratch_ = std::move(pool.back());
      pool.pop_back();
    }
  }
  ~ScratchLease() {
    scratch_->clear();
    free_list().push_back(std::move(scratch_));
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;

  T& operator*() { return *scratch_; }

 private:
  static std::vector<std::unique_ptr<T>>& free_list() {
    thread_local std::vector<std::unique_ptr<T>> pool;
    return pool;
  }
  std::unique_ptr<T> scratch_;
};

}  // namespace ag
