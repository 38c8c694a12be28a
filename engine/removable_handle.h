#pragma once

#include <cstdint>
#include <memory>
#include <utility>

namespace ag {

class Node;

// What registering a hook returns (Note [Hooks], engine/hooks.h), as PyTorch's RemovableHandle:
// remove() takes the hook out; a second remove(), or one after the node has died, does nothing.
// Dropping the handle leaves the hook registered, as in PyTorch; for a hook that lives for one
// scope, hold the handle in a ScopedHook (PyTorch's `with handle:`). Copies name the same hook.
class RemovableHandle {
 public:
  RemovableHandle() = default;  // names no hook: remove() does nothing
  RemovableHandle(std::weak_ptr<Node> node, uint64_t id) : node_(std::move(node)), id_(id) {}

  void remove() const;
  // The hook's number, unique in the process (0 for a handle that names no hook).
  uint64_t id() const { return id_; }

 private:
  std::weak_ptr<Node> node_;
  uint64_t id_ = 0;
};

// Removes its hook when it goes out of scope: PyTorch's `with handle:`.
class ScopedHook {
 public:
  ScopedHook() = default;
  explicit ScopedHook(RemovableHandle handle) : handle_(std::move(handle)) {}
  ~ScopedHook() { handle_.remove(); }
  ScopedHook(ScopedHook&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  ScopedHook& operator=(ScopedHook&& other) noexcept {
    if (this != &other) {
      handle_.remove();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  ScopedHook(const ScopedHook&) = delete;
  ScopedHook& operator=(const ScopedHook&) = delete;

 private:
  RemovableHandle handle_;
};

}  // namespace ag
