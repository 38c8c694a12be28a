#pragma once

namespace ag {

// Whether ops record a graph on this thread (torch.is_grad_enabled). Backward runs its formulas
// with grad mode equal to create_graph.
bool grad_enabled();
void set_grad_enabled(bool enabled);

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
