// Note [Activation checkpointing] (engine/checkpoint.h).
#include "engine/checkpoint.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/saved_tensor_hooks.h"

namespace ag {

namespace {

// One checkpoint() call: what its recomputation needs, and the values recomputed but not yet
// unpacked.
class Frame {
 public:
  Frame(CheckpointFunction fn, const TensorList& inputs) : fn_(std::move(fn)) {
    for (const Tensor& t : inputs) {
      inputs_.push_back(t.defined() ? t.detach() : Tensor());
      requires_grad_.push_back(t.defined() && t.requires_grad());
      versions_.push_back(t.defined() ? t.version() : 0);
    }
  }

  size_t number_next_save() { return saved_++; }

  // The k-th value the forward saved, recomputed if it is not waiting here.
  Tensor take(size_t k) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = recomputed_.find(k);
    if (it == recomputed_.end()) {
      recompute();
      it = recomputed_.find(k);
    }
    Tensor value = std::move(it->second);
    recomputed_.erase(it);
    return value;
  }

  // The value that the k-th stands for was released: its recomputation, if any, goes too.
  void forget(size_t k) {
    std::lock_guard<std::mutex> lock(mutex_);
    recomputed_.erase(k);
  }

 private:
  void recompute() {
    TensorList inputs;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Tensor& t = inputs_[i];
      AG_CHECK(!t.defined() || t.version() == versions_[i], "checkpoint: input ", i, " (",
               t.describe(), ") was modified by an in-place operation after the forward (version ",
               t.version(), ", expected ", versions_[i],
               "), so the values its backward needs cannot be recomputed");
      Tensor fresh = t.defined() ? t.detach() : Tensor();
      if (requires_grad_[i]) fresh.set_requires_grad(true);
      inputs.push_back(fresh);
    }
    std::map<size_t, Tensor> values;
    size_t n = 0;
    {
      GradModeGuard grad_mode(true);
      SavedTensorsHooks keep_by_number(
          [&](const Tensor& t) -> std::any {
            values.emplace(n++, t.detach());
            return {};
          },
          [](const std::any&) -> Tensor {
            fail("checkpoint: the recomputation's own graph is never differentiated");
          });
      fn_(inputs);
    }
    AG_CHECK(n == saved_, "checkpoint: the recomputation saved ", n,
             " values for backward where the forward saved ", saved_,
             "; the checkpointed function must run the same ops on the same inputs each time");
    recomputed_ = std::move(values);
  }

  CheckpointFunction fn_;
  TensorList inputs_;  // aliases of the inputs' data (Note [Saved values hold no cycles])
  std::vector<bool> requires_grad_;
  std::vector<uint32_t> versions_;
  size_t saved_ = 0;  // values the forward saved (packed)
  std::mutex mutex_;  // concurrent backward calls through one graph
  std::map<size_t, Tensor> recomputed_;
};

// What a checkpointed value is packed as: its number; freeing it frees its recomputation.
struct Ticket {
  std::shared_ptr<Frame> frame;
  size_t k;
  Ticket(std::shared_ptr<Frame> f, size_t n) : frame(std::move(f)), k(n) {}
  ~Ticket() { frame->forget(k); }
  Ticket(const Ticket&) = delete;
  Ticket& operator=(const Ticket&) = delete;
};

}  // namespace

TensorList checkpoint(const CheckpointFunction& fn, const TensorList& inputs) {
  AG_CHECK(fn != nullptr, "checkpoint: the function is empty");
  auto frame = std::make_shared<Frame>(fn, inputs);
  SavedTensorsHooks by_number(
      [frame](const Tensor&) -> std::any {
        return std::make_shared<const Ticket>(frame, frame->number_next_save());
      },
      [](const std::any& packed) {
        const auto& ticket = std::any_cast<const std::shared_ptr<const Ticket>&>(packed);
        return ticket->frame->take(ticket->k);
      });
  return fn(inputs);
}

}  // namespace ag
