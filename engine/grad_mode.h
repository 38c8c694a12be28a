#pragma once

namespace ag {

namespace detail {
// Constant-initialized and defined here, so reading it inline is one TLS load (every op reads it).
inline thread_local bool grad_enabled = true;
}  // namespace detail

// Whether ops record a graph on this thread (torch.is_grad_enabled). Backward runs its formulas
// with grad mode equal to create_graph.
inline bool grad_enabled() { return detail::grad_enabled; }
inline void set_grad_enabled(bool enabled) { detail::grad_enabled = enabled; }

class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : previous_(grad_enabled()) { set_grad_enabled(enabled); }
  ~GradModeGuard() { set_grad_enabled(previous_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

// torch.no_grad()
class NoGradGuard : public GradModeGuard {
 public:
  NoGradGuard() : GradModeGuard(false) {}
};

}  // namespace ag
