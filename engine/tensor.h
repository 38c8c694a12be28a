#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/dtype.h"
#include "engine/memory/object_pool.h"
#include "engine/memory/ref.h"
#include "engine/memory/shape.h"
#include "engine/memory/storage.h"
#include "engine/removable_handle.h"

namespace ag {

class AccumulateGrad;
class Node;
struct TensorImpl;

// A tangent a tensor carries at one dual level (Note [Forward mode], engine/forward_ad.h).
struct LevelTangent {
  uint64_t level_id;
  Ref<TensorImpl> tangent;
};

// How a view was made, as PyTorch's CreationMeta: which writes through it or into its base it
// refuses, and what it says (Note [How a view was made], ops/views.h).
enum class CreationMeta : uint8_t {
  kDefault,           // by a view op with grad mode on
  kNoGradMode,        // with grad mode off
  kMultiOutputNode,   // one of several views that one call returned (split, a custom Function)
  kInCustomFunction,  // inside a custom Function's forward, or an input it returned as is
};

// Note [Strided tensors]
// As PyTorch's, a tensor reads its Storage at sizes, strides and a storage offset: element
// (i0, ..., ik) is element offset + i0 * s0 + ... + ik * sk of the storage. Every op writes a
// fresh contiguous (row-major) output; only the view ops (ops/view_ops.cc) make other strides,
// over their input's storage. A tensor with the row-major strides of its shape keeps no strides
// (a null pointer), so making one costs nothing over its shape; strides() computes them. As
// PyTorch's is_contiguous, strides of dims of size 1 do not matter to contiguity, but a view keeps
// the ones its op gives them (x.unfold(0, 2, 1) of a [2] x is [1, 2] with strides [1, 1]), as
// PyTorch's does: they decide whether two views are the same data (copy_'s early return) and
// the strides that later views compute. is_contiguous() is the test the kernels' fast paths read.
// The kernels take strided operands (ops/backend.h, dense()).
//
// A strided tensor's strides (TensorImpl::strides), pooled as the TensorImpl itself (Note [Pooled
// tensor metadata]): a view with strides of its own (expand, a gradient expanded by sum's
// backward, transpose) allocates nothing once warm.
struct Strides final : Shape, PooledObject<Strides> {
  Strides(const Shape& strides, bool contiguous) : Shape(strides), contiguous(contiguous) {}
  // Contiguous in PyTorch's sense (row-major but for the strides of dims of size 1, or empty).
  const bool contiguous;
};

// The state behind a Tensor handle: data (sizes and strides over a Storage) plus autograd
// metadata. Handles share one TensorImpl; views and detach() share the Storage instead.
// Reference-counted in place and pooled (Note [Intrusive reference counts], Note [Pooled tensor
// metadata]).
struct TensorImpl final : RefCounted, PooledObject<TensorImpl> {
  TensorImpl(const Shape& shape, DType dtype, Ref<Storage> storage, int64_t offset = 0,
             std::unique_ptr<const Strides> strides = nullptr)
      : shape(shape),
        dtype(dtype),
        storage(std::move(storage)),
        offset(offset),
        data(static_cast<char*>(this->storage->data()) +
             offset * static_cast<int64_t>(element_size(dtype))),
        numel(ag::numel(shape)),
        device(this->storage->device()),
        strides(std::move(strides)) {}
  ~TensorImpl() {
    if (grad_accumulator) forget_grad_accumulator();
    if (retains_grad) forget_retains_grad();
    if (tangents) forget_tangents();
  }

  // Sets requires_grad, and the copy that this tensor's AccumulateGrad keeps if it is its leaf.
  void set_requires_grad(bool value);

  // Fixed at construction. The last three follow from the others; every op reads them, and each
  // would otherwise be a chain of dependent loads or a loop over the shape.
  const Shape shape;
  const DType dtype;
  const Ref<Storage> storage;
  const int64_t offset;  // in elements
  void* const data;
  const int64_t numel;
  const Device device;
  // Null when contiguous (Note [Strided tensors]), so that making and freeing a contiguous
  // tensor costs one pointer; else one stride per dim, in elements.
  const std::unique_ptr<const Strides> strides;

  // A leaf's flag (set_requires_grad), or true once an op gave this tensor a grad_fn. A view
  // also requires grad while its base does (Tensor::requires_grad()). Written through
  // set_requires_grad(), which a leaf's AccumulateGrad follows (Note [The leaf's flag, copied]).
  bool requires_grad = false;
  // A non-leaf whose .grad the retains-grad hook on its grad_fn keeps (Tensor::retain_grad(),
  // Note [Hooks] in engine/hooks.h). Written under autograd_mutex.
  bool retains_grad = false;
  // Made by unpacking a saved output (SavedVariable::with_history): a tensor of its own with the
  // output's history, as PyTorch's unpack makes, which a later detach_() of the output does not
  // touch (Note [Saved values detached in place], engine/saved_variable.h).
  bool unpacked_output = false;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;         // which output of grad_fn this tensor is
  Ref<TensorImpl> grad;

  // A leaf's AccumulateGrad node, created on first use and kept by the leaf; the node points
  // back with a plain pointer that the leaf's destructor clears (engine/accumulate_grad.h), so
  // there is no cycle. Every graph built on the leaf shares it, and so do the aliases that stand
  // for the leaf as a saved value (Note [Saved values hold no cycles]).
  std::shared_ptr<AccumulateGrad> grad_accumulator;
  // Created with grad_accumulator: what every save of this leaf keeps while it requires grad, an
  // alias of its data that requires grad and holds grad_accumulator (Note [Saved values hold no
  // cycles]). One per leaf, not one per save: saving a weight costs a reference count.
  Ref<TensorImpl> saved_alias;
  // Set (release) once grad_accumulator and saved_alias are: from then on they never change, and
  // are read without the lock (every op recorded on a leaf reads them).
  std::atomic<bool> has_grad_accumulator{false};
  std::mutex autograd_mutex;  // guards grad_accumulator, grad and a view's history refresh

  // Set on views (Note [In-place ops on views], ops/views.h): the root tensor whose storage this
  // one views, and the storage version that this view's grad_fn reflects.
  Ref<TensorImpl> view_base;
  std::atomic<uint32_t> view_version{0};
  CreationMeta creation_meta = CreationMeta::kDefault;  // read only while view_base is set
  // Where a view reads its root base, in the base's own row-major element order (not the
  // storage's): strides and offset. Note [Views of any stride] (ops/views.h). Over the root's
  // storage instead (from the root's storage offset) where view_over_storage is set: Note [Views
  // over a root's storage].
  Shape view_strides;
  int64_t view_offset = 0;
  bool view_over_storage = false;
  // Note [Tangents of views] (engine/forward_ad.cc): a view whose tangent is its own, never its
  // root base's (make_dual's result, unpack_dual's primal: PyTorch's views that are not forward
  // differentiable), and, on a view made of one (or of its views), that tensor.
  bool forward_root = false;
  Ref<TensorImpl> forward_base;

  // The tangents this tensor carries (Note [Forward mode], engine/forward_ad.h): null for every
  // tensor made outside a dual level.
  std::unique_ptr<std::vector<LevelTangent>> tangents;

 private:
  void forget_grad_accumulator();
  void forget_retains_grad();  // engine/hooks.cc
  void forget_tangents();      // engine/forward_ad.cc
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Ref<TensorImpl> impl) : impl_(std::move(impl)) {}

  // Allocates an uninitialized (CPU: unspecified contents) tensor.
  static Tensor empty(const Shape& shape, DType dtype = DType::kFloat32, Device device = kCPU);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl_->shape; }
  // Note [Strided tensors].
  Shape strides() const;
  int64_t stride(int64_t d) const;
  int64_t storage_offset() const { return impl_->offset; }
  bool is_contiguous() const { return impl_->strides == nullptr || impl_->strides->contiguous; }
  // Whether the strides are the row-major ones of the shape, size-1 dims included (none kept).
  bool has_row_major_strides() const { return impl_->strides == nullptr; }
  // Whether the two read one storage (a view and its base, two views of one base, an alias).
  bool shares_storage_with(const Tensor& o) const { return impl_->storage == o.impl_->storage; }
  // A view (of any view op) and its root base, as PyTorch's _is_view() and _base.
  bool is_view() const { return impl_->view_base != nullptr; }
  Tensor base() const { return Tensor(impl_->view_base); }
  int64_t dim() const { return static_cast<int64_t>(impl_->shape.size()); }
  int64_t size(int64_t d) const;
  int64_t numel() const { return impl_->numel; }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->device; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(dtype()); }
  // Same shape, dtype and device: one may stand in for the other, element for element.
  bool same_layout_as(const Tensor& o) const {
    return shape() == o.shape() && dtype() == o.dtype() && device() == o.device();
  }

  // The first element's address; a non-contiguous tensor's elements are at strides() from it.
  void* raw_data() const { return impl_->data; }
  // The elements as T, which must match dtype() (the kernels dispatch on it first). A write
  // through this pointer is invisible to the version counter: call bump_version() after one, or
  // saved-value checks and known zeros (Note [Known zeros]) go on trusting the old values.
  template <typename T>
  T* data() const {
    return static_cast<T*>(impl_->data);
  }
  // Host copies of the values (for tests, printing, gradcheck); converts to double.
  std::vector<double> to_vector() const;
  double item() const;

  // Autograd metadata. A view's history follows in-place writes to its base (Note [In-place ops
  // on views] in ops/views.h), so reading it first brings a stale view up to date. A view
  // requires grad while its base does, whenever it was made (Note [View flags follow the base]);
  // that needs no refresh: a view regenerates only when it has a history or its base requires
  // grad, and so requires grad before and after.
  bool requires_grad() const {
    return impl_->requires_grad || (impl_->view_base && impl_->view_base->requires_grad);
  }
  // Only leaves may be marked; throws otherwise (like torch.Tensor.requires_grad_).
  Tensor& set_requires_grad(bool requires_grad);
  bool is_leaf() const { return grad_fn() == nullptr; }
  // The history as it stands, a stale view's not brought up to date first: what PyTorch's
  // requires_grad_() and its in-place ops' leaf check read (VariableHooks::is_leaf).
  std::shared_ptr<Node> history_as_it_stands() const;
  const std::shared_ptr<Node>& grad_fn() const {
    sync_view();
    return impl_->grad_fn;
  }
  uint32_t output_nr() const {
    sync_view();
    return impl_->output_nr;
  }
  Tensor grad() const;
  void set_grad(const Tensor& g);

  // Hooks, as PyTorch's (Note [Hooks], engine/hooks.h; defined in engine/hooks.cc).
  // A hook on this tensor's gradient, run when that gradient is computed: it may return a
  // replacement of the same shape, dtype and device, or an undefined tensor to keep it. Several
  // run in the order they were registered. Throws if the tensor does not require grad.
  RemovableHandle register_hook(std::function<Tensor(const Tensor& grad)> hook) const;
  // Keeps the gradient of this non-leaf in .grad whenever a backward pass (or grad()) computes
  // it, summed across calls; a no-op on a leaf. Throws if the tensor does not require grad.
  void retain_grad() const;
  bool retains_grad() const;
  // A leaf's hook run after its gradient was accumulated into .grad, handed the leaf.
  RemovableHandle register_post_accumulate_grad_hook(
      std::function<void(const Tensor& leaf)> hook) const;

  uint32_t version() const { return impl_->storage->version(); }
  void bump_version() const { impl_->storage->bump_version(); }
  // What is known of the values without reading them (Note [Known zeros]).
  using Zeros = Storage::Zeros;
  Zeros known_zeros() const { return impl_->storage->known_zeros(); }
  void mark_zeros(Zeros zeros) const { impl_->storage->mark_zeros(zeros); }

  // A new leaf sharing this tensor's storage (and so its version counter) and layout, not
  // requiring grad.
  Tensor detach() const;
  // Makes this tensor a leaf that does not require grad, as PyTorch's detach_(): its history is
  // dropped (graphs built from it keep theirs) and its version is unchanged. A view is refused,
  // as in PyTorch: its history follows its base's (Note [In-place ops on views]).
  Tensor& detach_();
  // A contiguous tensor's view with another shape over the same storage; no autograd
  // (ops::reshape adds that).
  Tensor alias_with_shape(const Shape& shape) const;
  // A view with any layout over the same storage; no autograd (the view ops add that).
  Tensor alias_with_layout(const Shape& shape, const Shape& strides, int64_t offset) const;

  const Ref<TensorImpl>& impl() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  std::string describe() const;  // "float32[2, 3]"

 private:
  void sync_view() const {
    if (impl_->view_base) refresh_view_history();
  }
  void refresh_view_history() const;

  Ref<TensorImpl> impl_;
};

using TensorList = std::vector<Tensor>;

}  // namespace ag
