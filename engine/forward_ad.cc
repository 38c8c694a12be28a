#include "engine/forward_ad.h"

#include <algorithm>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "engine/engine_ops.h"
#include "engine/error.h"

namespace ag {
namespace {

// The live levels' ids, outermost first. A level's id is never reused, so a tangent kept under the
// id of a level that has ended is never read again.
constexpr int kMaxLevels = 8;
std::mutex levels_mutex;  // guards entering and ending levels
std::atomic<uint64_t> level_ids[kMaxLevels];
std::atomic<int64_t> level_batch[kMaxLevels];  // Note [Batched tangents]: 0 where unbatched
uint64_t next_level_id = 1;

thread_local uint32_t suspended_levels = 0;  // bit i: level i

// Note [Tangents end with their level]
// As PyTorch's ForwardADLevel, each live level keeps the tensors it gave a tangent to (a tensor
// that dies first takes itself off: TensorImpl::forget_tangents), and its end drops those
// tangents. A tangent can hold the tensor that carries it: tanh's rule reads its result, whose
// history the rule's ops save, so the result holds its tangent, whose history holds the result.
// Dropping the tangents at the level's end breaks every such cycle; a tensor kept past its level
// holds no tangent's memory.
std::mutex given_mutex;                             // guards given
std::unordered_set<TensorImpl*> given[kMaxLevels];  // by level index

void remember_tangent(TensorImpl* impl, int level) {
  std::lock_guard<std::mutex> lock(given_mutex);
  given[level].insert(impl);
}

uint64_t id_of(int level) {
  AG_CHECK(level >= 0 && level < forward_ad::num_levels(), "forward AD: level ", level,
           " is not live (", forward_ad::num_levels(), " live levels)");
  return level_ids[level].load(std::memory_order_relaxed);
}

int resolve(int level, const char* op) {
  const int n = forward_ad::num_levels();
  AG_CHECK(n > 0, op,
           ": no dual level is live; make dual tensors inside a DualLevel (as "
           "torch.autograd.forward_ad.dual_level)");
  return level < 0 ? n - 1 : level;
}

// PyTorch's set_fw_grad keeps a tangent only in its primal's layout (sizes, strides, offset and
// storage size: has_same_meta), else copies it into a tensor of the primal's strides; a primal
// that reads one element at several indices (expanded) makes that copy raise. Only the raise is
// observable here: the engine keeps a root's tangent contiguous and reads views through it.
void check_tangent_layout(const Tensor& primal, const Tensor& tangent) {
  const Shape strides = primal.strides();
  const bool overlaps = has_internal_overlap(primal.shape(), strides);
  const bool same_meta = tangent.strides() == strides &&
                         tangent.storage_offset() == primal.storage_offset() &&
                         tangent.impl()->storage->nbytes() == primal.impl()->storage->nbytes();
  AG_CHECK(!overlaps || same_meta,
           "make_dual: unsupported operation: more than one element of the written-to tensor "
           "refers to a single memory location. Please clone() the tensor before performing the "
           "operation. (the primal ",
           primal.describe(), " has strides ", to_string(strides), "; the tangent ",
           tangent.describe(), " strides ", to_string(tangent.strides()), ")");
}

Tensor own_tangent(const TensorImpl& impl, uint64_t id) {
  if (impl.tangents == nullptr) return Tensor();
  for (const LevelTangent& lt : *impl.tangents) {
    if (lt.level_id == id) return Tensor(lt.tangent);
  }
  return Tensor();
}

// Note [Tangents of views]
// A view that has no tangent of its own reads its forward base's through its own layout, over the
// root base's elements in row-major order (Note [Views of any stride], ops/views.h). The forward
// base is the root base, except for the views of a make_dual result (TensorImpl::forward_root,
// which is no forward view in PyTorch: its tangent is its own, never its primal's): their forward
// base is that result (TensorImpl::forward_base). A root's tangent is contiguous; a make_dual
// result's, where views may read it (one tangent_to_write made), has its own layout in a buffer of
// its root's shape. As PyTorch's (AutogradMeta::fw_grad), the view's tangent is an as_strided view
// of the base's tangent, recorded as ops are, which the view then keeps as its own: it has the
// history of the base's (unpack_dual(v).tangent requires grad where the base's does), an in-place
// write into it is recorded on the base's tangent, and two reads give the same tensor.
Ref<TensorImpl> forward_base(const TensorImpl& impl) {
  if (impl.forward_root || impl.view_base == nullptr) return Ref<TensorImpl>();
  return impl.forward_base ? impl.forward_base : impl.view_base;
}

Tensor view_of_base_tangent(const Tensor& view, const TensorImpl& base, const Tensor& base_tangent,
                            int level) {
  const TensorImpl& impl = *view.impl();
  // Note [Views over a root's storage] (ops/views.h): read at the root's storage layout, which
  // the root's tangent must have.
  AG_CHECK(!impl.view_over_storage ||
               (base.view_base == nullptr && base_tangent.strides() == view.base().strides()),
           "forward AD: the tangent of ", view.describe(),
           ", a view over the storage of a tensor that is not contiguous (strides ",
           to_string(view.base().strides()), "), is read from that tensor's tangent, which has ",
           "strides ", to_string(base_tangent.strides()), "; give it a tangent with its strides");
  // Where the base's tangent starts in its buffer: the base's own offset in its root.
  const int64_t start = base.view_base ? base.view_offset : 0;
  Tensor t;
  {
    forward_ad::SuspendLevel reading_the_tangent(level);
    Shape shape = impl.shape, strides = impl.view_strides;
    if (forward_ad::batch_size(level) > 0) {  // Note [Batched tangents]: row b views row b
      shape.insert(shape.begin(), base_tangent.shape()[0]);
      strides.insert(strides.begin(), base_tangent.strides()[0]);
    }
    t = engine_ops::as_strided(base_tangent, shape, strides,
                               base_tangent.storage_offset() - start + impl.view_offset);
  }
  forward_ad::set_tangent(view, level, t, "forward AD");
  return t;
}

}  // namespace

DualLevel::DualLevel() : DualLevel(0) {}

DualLevel::DualLevel(int64_t batch) {
  AG_CHECK(batch >= 0, "forward AD: a level's batch size must be >= 0 (0: unbatched), got ", batch);
  std::lock_guard<std::mutex> lock(levels_mutex);
  const int n = forward_ad::detail::live_levels.load(std::memory_order_relaxed);
  AG_CHECK(n < kMaxLevels, "forward AD: at most ", kMaxLevels, " dual levels may be live");
  level_ids[n].store(next_level_id++, std::memory_order_relaxed);
  level_batch[n].store(batch, std::memory_order_relaxed);
  index_ = n;
  forward_ad::detail::live_levels.store(n + 1, std::memory_order_release);
}

DualLevel::~DualLevel() {
  // Note [Tangents end with their level]: released after the locks, as a tangent's end can end
  // tensors that carry tangents (each takes the lock to forget its own).
  std::vector<Ref<TensorImpl>> dropped;
  std::lock_guard<std::mutex> lock(levels_mutex);
  {
    std::lock_guard<std::mutex> given_lock(given_mutex);
    for (int l = index_; l < kMaxLevels; ++l) {
      const uint64_t id = level_ids[l].load(std::memory_order_relaxed);
      for (TensorImpl* impl : given[l]) {
        std::vector<LevelTangent>& list = *impl->tangents;
        for (size_t i = list.size(); i-- > 0;) {
          if (list[i].level_id != id) continue;
          dropped.push_back(std::move(list[i].tangent));
          list.erase(list.begin() + static_cast<long>(i));
        }
      }
      given[l].clear();
    }
  }
  // Levels end innermost first (they are scopes); ending this one ends any inside it too.
  forward_ad::detail::live_levels.store(index_, std::memory_order_release);
}

Tensor make_dual(const Tensor& primal, const Tensor& tangent, int level) {
  level = resolve(level, "make_dual");
  AG_CHECK(primal.defined() && tangent.defined(), "make_dual: expected defined tensors");
  AG_CHECK(tangent.shape() == forward_ad::tangent_shape(primal, level),
           "make_dual: the tangent's shape ", to_string(tangent.shape()), " is not the primal's ",
           to_string(forward_ad::tangent_shape(primal, level)),
           " (PyTorch: Trying to set a forward gradient that has a different size than that of "
           "the original Tensor)");
  AG_CHECK(tangent.dtype() == primal.dtype() && tangent.device() == primal.device(),
           "make_dual: the tangent (", tangent.describe(),
           ") must have the primal's dtype and device (", primal.describe(), ")");
  // PyTorch refuses it too (found by the conformance corpus: the engine replaced the tangent).
  AG_CHECK(!forward_ad::tangent(primal, level).defined(),
           "make_dual: Making a dual Tensor based on a Tensor that already has a forward gradient "
           "at the same level ",
           level, " is not supported");
  if (forward_ad::batch_size(level) == 0) check_tangent_layout(primal, tangent);
  Tensor dual;
  {
    forward_ad::SuspendLevel reading_primal(level);  // the alias carries no tangent of its own
    dual = engine_ops::alias(primal);
  }
  dual.impl()->forward_root = true;  // Note [Tangents of views]
  forward_ad::set_tangent(dual, level, tangent, "make_dual");
  return dual;
}

UnpackedDual unpack_dual(const Tensor& tensor, int level) {
  // As PyTorch's unpack_dual outside any level: the tensor itself, and no tangent.
  if (level < 0 && forward_ad::num_levels() == 0) return {tensor, Tensor()};
  level = resolve(level, "unpack_dual");
  UnpackedDual out;
  out.tangent = forward_ad::tangent(tensor, level);
  forward_ad::SuspendLevel reading_primal(level);
  out.primal = engine_ops::alias(tensor);
  out.primal.impl()->forward_root = true;  // Note [Tangents of views]
  return out;
}

void TensorImpl::forget_tangents() {
  std::lock_guard<std::mutex> lock(given_mutex);
  for (std::unordered_set<TensorImpl*>& impls : given) impls.erase(this);
}

namespace forward_ad {

int num_levels() { return detail::live_levels.load(std::memory_order_acquire); }

int64_t batch_size(int level) { return level_batch[level].load(std::memory_order_relaxed); }

Shape tangent_shape(const Tensor& t, int level) {
  Shape shape = t.shape();
  const int64_t batch = batch_size(level);
  if (batch > 0) shape.insert(shape.begin(), batch);
  return shape;
}

Tensor tangent(const Tensor& t, int level) {
  if (!t.defined() || level >= num_levels()) return Tensor();
  const uint64_t id = id_of(level);
  const TensorImpl& impl = *t.impl();
  Tensor own = own_tangent(impl, id);
  const Ref<TensorImpl> base = forward_base(impl);
  if (own.defined() || base == nullptr) return own;
  const Tensor base_tangent = own_tangent(*base, id);
  if (!base_tangent.defined()) return Tensor();
  return view_of_base_tangent(t, *base, base_tangent, level);
}

void set_tangent(const Tensor& t, int level, const Tensor& tangent, const char* op,
                 bool view_op_result) {
  // Note [Batched tangents]: an unbatched level compares the shapes as they are.
  const bool same_shape = batch_size(level) == 0 ? tangent.shape() == t.shape()
                                                 : tangent.shape() == tangent_shape(t, level);
  AG_CHECK(same_shape && tangent.dtype() == t.dtype() && tangent.device() == t.device(), op,
           ": forward AD: the tangent (", tangent.describe(), ") does not match the result (",
           t.describe(), ")");
  const uint64_t id = id_of(level);
  TensorImpl& impl = *t.impl();
  // A root's tangent is read through its views' layouts, which need it contiguous; a view's is
  // kept as it is, so that a write into it reaches the tangent it views (a view op's rule gives
  // the view of its input's tangent).
  const bool root = impl.view_base == nullptr && !view_op_result;
  const Tensor kept =
      !root || tangent.is_contiguous() ? tangent : engine_ops::contiguous_clone(tangent);
  if (impl.tangents == nullptr) impl.tangents = std::make_unique<std::vector<LevelTangent>>();
  std::vector<LevelTangent>& list = *impl.tangents;
  // The tangent it replaces, if any. A level that has ended left none here: its end dropped them
  // (Note [Tangents end with their level]).
  list.erase(std::remove_if(list.begin(), list.end(),
                            [id](const LevelTangent& lt) { return lt.level_id == id; }),
             list.end());
  list.push_back({id, kept.impl()});
  remember_tangent(&impl, level);
}

void copy_tangents(const Tensor& from, const Tensor& to) {
  for (int level = 0; level < num_levels(); ++level) {
    const Tensor t = tangent(from, level);
    if (t.defined()) set_tangent(to, level, t, "forward AD");
  }
}

Tensor tangent_to_write(const Tensor& t, int level) {
  Tensor existing = tangent(t, level);
  if (existing.defined()) return existing;
  {
    SuspendLevel zeros_carry_none(level);
    const Ref<TensorImpl> base = forward_base(*t.impl());
    const Tensor owner(base ? base : t.impl());
    const TensorImpl& o = *owner.impl();
    // Note [Batched tangents]: zeros of the batched shape, each row in the owner's layout.
    const auto zeros = [level](const Tensor& like) {
      return engine_ops::zeros({tangent_shape(like, level), like.dtype(), like.device()});
    };
    if (o.view_base == nullptr) {
      set_tangent(owner, level, zeros(owner), "forward AD");
    } else {  // a make_dual result: its layout in zeros of its root's shape (Note [Tangents of
              // views])
      const Tensor root = zeros(Tensor(o.view_base));
      Shape shape = o.shape, strides = o.view_strides;
      if (batch_size(level) > 0) {
        shape.insert(shape.begin(), root.shape()[0]);
        strides.insert(strides.begin(), root.strides()[0]);
      }
      set_tangent(owner, level, engine_ops::as_strided(root, shape, strides, o.view_offset),
                  "forward AD");
    }
  }
  return tangent(t, level);  // a view's: Note [Tangents of views]
}

SuspendLevel::SuspendLevel(int level)
    : level_(level), was_suspended_(suspended_levels >> level & 1u) {
  suspended_levels |= 1u << level;
}
SuspendLevel::~SuspendLevel() {
  if (!was_suspended_) suspended_levels &= ~(1u << level_);
}
bool suspended(int level) { return suspended_levels >> level & 1u; }

}  // namespace forward_ad
}  // namespace ag
