#pragma once

// Forward-mode AD: dual levels and the tangents tensors carry in them (Note [Forward mode]). The
// tangent of an op's result is computed when the op runs, by its jvp rule (ops/jvp.h); the
// transforms built on both modes (jvp, vjp, jacfwd, jacrev, hvp, hessian) are engine/functional.h.

#include <atomic>
#include <cstdint>
#include <utility>

#include "engine/grad_mode.h"
#include "engine/tensor.h"

namespace ag {

// Note [Forward mode]
// As torch.autograd.forward_ad: inside a DualLevel, make_dual(primal, tangent) gives a tensor
// that carries `tangent` at that level, and every op on tensors that carry tangents gives its
// result the tangent its jvp rule computes (the directional derivative of the op along its
// inputs' tangents), right when the op runs: there is no graph and no second pass. A tensor that
// carries no tangent at a level has a zero one there, and an op none of whose inputs carry one
// computes none.
//
// Levels nest (forward-over-forward, which PyTorch's forward_ad refuses and torch.func allows):
// each level is its own tangent. A jvp rule runs with its own level suspended on this thread, so
// the ops it computes carry the outer levels' tangents (the tangent of a tangent) but not their
// own: a rule reads its inputs' primal values, as PyTorch's do (self_p). The ops of a rule are the
// engine's differentiable ops, so tangents have a reverse-mode history too: a gradient of a
// tangent (reverse-over-forward) and a tangent of a gradient (forward-over-reverse: backward's
// formulas are ops too, so a gradient taken inside a level carries its tangent) both come out of
// the two modes as they are.
//
// Views: a tangent is kept by the tensor it was given to (make_dual's result, an op's result).
// A view that has none of its own reads its root base's tangent through its own layout (and keeps
// that view of it, Note [Tangents of views], forward_ad.cc), so after an in-place op gives a base
// a tangent, every view of it has the view of that tangent; an
// in-place op on a view without a tangent first gives its root base a zero one, then writes the
// view's part of it, as PyTorch does. A level's end drops every tangent it gave (Note [Tangents
// end with their level], forward_ad.cc).
//
// The fast paths of backward that write into gradients in place or fuse sums (Note [Summing
// gradients in place], Note [Sums fused into formulas], Note [Formulas in the incoming gradient])
// bypass the ops, and so would drop tangents: they are off while any level is live
// (values_unobserved()). AccumulateGrad's sum into an existing .grad stays in place inside a
// level, as PyTorch's (a held .grad sees it): it goes through ops::add_, which carries tangents.
//
// Note [Batched tangents]
// A level entered with a batch size B carries B tangents at once: each tangent there has shape
// [B, *primal shape] (make_dual's too), row b being the b-th direction. An op's result gets its
// B tangents from its batching rule where one is declared, else from its jvp rule run once per
// row (ops/batched_jvp.h); views and in-place writes read and write a base's batched tangent
// through the same layouts, shifted past the batch dim. jacfwd and hessian run one batched level
// where they ran one level per column (engine/functional.h). An unbatched level costs nothing
// more: every batched path is behind the level's batch size.
class DualLevel {
 public:
  DualLevel();  // enters a new innermost level
  // A batched level (Note [Batched tangents]): its tangents have a leading dim of `batch` >= 1.
  explicit DualLevel(int64_t batch);
  ~DualLevel();  // ends it; levels end innermost first
  DualLevel(const DualLevel&) = delete;
  DualLevel& operator=(const DualLevel&) = delete;
  int index() const { return index_; }  // 0 for the outermost live level

 private:
  int index_;
};

// A view of `primal` (sharing its storage and version; backward through it reaches `primal`) that
// carries `tangent` at `level` (default: the innermost live one). The tangent must have primal's
// shape, dtype and device; it is kept as it is when contiguous, else copied.
Tensor make_dual(const Tensor& primal, const Tensor& tangent, int level = -1);
struct UnpackedDual {
  Tensor primal;   // a view of the tensor that carries no tangent at the level
  Tensor tangent;  // the tensor's tangent at the level, undefined if it carries none
};
// With no level live (and none named), as PyTorch: {tensor itself, undefined}.
UnpackedDual unpack_dual(const Tensor& tensor, int level = -1);

namespace forward_ad {

namespace detail {
inline std::atomic<int> live_levels{0};
}  // namespace detail

// Whether any dual level is live: what every op reads first (one relaxed load).
inline bool live() { return detail::live_levels.load(std::memory_order_relaxed) != 0; }
int num_levels();
// The batch size of live level `level` (Note [Batched tangents]); 0 for an unbatched level.
// Unchecked (one relaxed load): the level must be live.
int64_t batch_size(int level);
// The shape of the tangents `t` carries at `level`: its own, after the batch dim where batched.
Shape tangent_shape(const Tensor& t, int level);

// The tangent `t` carries at live level `level` (its own, or its root base's seen through its
// layout, which it then keeps as its own), or an undefined tensor.
Tensor tangent(const Tensor& t, int level);
// Gives `t` its own tangent at `level`; checks its shape, dtype and device against t's, naming
// `op`. `view_op_result`: t is a view op's result, about to be marked a view (its tangent is the
// same view of its input's and is kept as it is, Note [Tangents of views]).
void set_tangent(const Tensor& t, int level, const Tensor& tangent, const char* op,
                 bool view_op_result = false);
// Gives `to` (another tensor object over the same values) the tangents `from` carries at every
// live level (a saved value's, Note [Forward mode]).
void copy_tangents(const Tensor& from, const Tensor& to);
// `t`'s tangent at `level`, made first where it has none: a zero tangent for its root base (or for
// t itself), which an in-place op then writes into (Note [Forward mode]: views).
Tensor tangent_to_write(const Tensor& t, int level);

// While alive, `level` is suspended on this thread: ops compute no tangent for it (a jvp rule
// runs so, Note [Forward mode]).
class SuspendLevel {
 public:
  explicit SuspendLevel(int level);
  ~SuspendLevel();
  SuspendLevel(const SuspendLevel&) = delete;
  SuspendLevel& operator=(const SuspendLevel&) = delete;

 private:
  int level_;
  bool was_suspended_;
};
bool suspended(int level);

// The levels at which an op's result gets a tangent (Note [Forward mode]): calls
// `at(level, tangents)` at every live level not suspended on this thread at which some of `inputs`
// (pointers to tensors, undefined ones among them) carries a tangent, `tangents` holding each
// input's there (undefined where it carries none).
template <typename Inputs, typename At>
void for_each_tangent_level(const Inputs& inputs, const At& at) {
  TensorList tangents;
  for (int level = 0; level < num_levels(); ++level) {
    if (suspended(level)) continue;
    tangents.clear();
    bool any = false;
    for (const Tensor* t : inputs) {
      tangents.push_back(t->defined() ? tangent(*t, level) : Tensor());
      any = any || tangents.back().defined();
    }
    if (any) at(level, tangents);
  }
}

}  // namespace forward_ad

// Note [Forward mode]: backward's in-place shortcuts change or reuse a tensor that no recorded
// op will read, which holds only when neither mode watches: grad mode off and no dual level live.
inline bool values_unobserved() { return !grad_enabled() && !forward_ad::live(); }

}  // namespace ag
