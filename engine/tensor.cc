#include "engine/tensor.h"

#include "engine/engine_ops.h"
#include "engine/error.h"
#include "engine/hooks.h"
#include "engine/memory/allocator.h"
#include "engine/node.h"

namespace ag {

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  int64_t numel = 1;  // checked and counted in one pass
  for (int64_t d : shape) {
    AG_CHECK(d >= 0, "empty: negative dimension in shape ", to_string(shape));
    numel *= d;
  }
  auto storage = Ref<Storage>::make(static_cast<size_t>(numel) * element_size(dtype), device);
  return Tensor(Ref<TensorImpl>::make(shape, dtype, std::move(storage)));
}

int64_t Tensor::size(int64_t d) const {
  int64_t n = dim();
  AG_CHECK(d >= -n && d < n, "size: dim ", d, " out of range for shape ", to_string(shape()));
  return shape()[d < 0 ? d + n : d];
}

Shape Tensor::strides() const {
  if (impl_->strides) return *impl_->strides;
  const Shape& sizes = shape();
  Shape strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= sizes[i];
  }
  return strides;
}

int64_t Tensor::stride(int64_t d) const {
  int64_t n = dim();
  AG_CHECK(d >= -n && d < n, "stride: dim ", d, " out of range for shape ", to_string(shape()));
  if (d < 0) d += n;
  if (impl_->strides) return (*impl_->strides)[d];
  int64_t s = 1;  // the contiguous stride, without building strides()
  for (int64_t i = d + 1; i < n; ++i) s *= shape()[i];
  return s;
}

std::vector<double> Tensor::to_vector() const {
  AG_CHECK(defined(), "to_vector: the tensor is undefined (a .grad that was never written?)");
  std::vector<double> out(static_cast<size_t>(numel()));
  if (out.empty()) return out;
  // The storage span the elements lie in (Note [Strided tensors]): [first, last] from the offset.
  const Shape sizes = shape(), steps = strides();
  int64_t first = 0, last = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    (steps[d] < 0 ? first : last) += steps[d] * (sizes[d] - 1);
  }
  dispatch_dtype(dtype(), [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> host(static_cast<size_t>(last - first + 1));
    allocator_for(device().type)
        .copy_to_host(host.data(), static_cast<T*>(raw_data()) + first, host.size() * sizeof(T));
    std::vector<int64_t> index(sizes.size(), 0);
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t at = -first;
      for (size_t d = 0; d < sizes.size(); ++d) at += index[d] * steps[d];
      out[i] = static_cast<double>(host[static_cast<size_t>(at)]);
      for (size_t d = sizes.size(); d-- > 0;) {  // odometer, last dim fastest
        if (++index[d] < sizes[d]) break;
        index[d] = 0;
      }
    }
  });
  return out;
}

double Tensor::item() const {
  AG_CHECK(defined(), "item: the tensor is undefined (a .grad that was never written?)");
  AG_CHECK(numel() == 1, "item: expected a tensor with one element, got shape ",
           to_string(shape()));
  return to_vector()[0];
}

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  // Whether it is a leaf is read from the history it has now, as PyTorch's requires_grad_()
  // does (VariableHooks::is_leaf reads grad_fn_): a view whose base was written since is not
  // regenerated first (Note [In-place ops on views]).
  const std::shared_ptr<Node> history = history_as_it_stands();
  // As in PyTorch, asking a non-leaf (which requires grad) to require grad is a no-op; only
  // turning it off is an error.
  if (requires_grad && history) return *this;
  AG_CHECK(!history,
           "set_requires_grad: only leaf tensors can change requires_grad; this tensor has "
           "grad_fn '",
           history->name(), "' (use detach() to get a leaf)");
  impl_->set_requires_grad(requires_grad);
  return *this;
}

std::shared_ptr<Node> Tensor::history_as_it_stands() const {
  std::lock_guard<std::mutex> lock(impl_->autograd_mutex);
  return impl_->grad_fn;
}

Tensor Tensor::grad() const {
  std::lock_guard<std::mutex> lock(impl_->autograd_mutex);
  return Tensor(impl_->grad);
}

void Tensor::set_grad(const Tensor& g) {
  AG_CHECK(!g.defined() || g.impl().get() != impl_.get(),
           "set_grad: can't assign a tensor as its own grad");
  if (g.defined()) {
    AG_CHECK(g.same_layout_as(*this), "set_grad: gradient ", g.describe(),
             " does not match tensor ", describe());
  }
  // As PyTorch's .grad setter, which reads the tensor's grad_fn for a gradient (not for None): a
  // stale view's history is brought up to date first (a later requires_grad_() sees it).
  if (g.defined()) sync_view();
  std::lock_guard<std::mutex> lock(impl_->autograd_mutex);
  impl_->grad = g.impl();
}

void Tensor::refresh_view_history() const { engine_ops::refresh_view(*this); }

Tensor Tensor::detach() const {
  return Tensor(Ref<TensorImpl>::make(
      impl_->shape, impl_->dtype, impl_->storage, impl_->offset,
      impl_->strides ? std::make_unique<const Strides>(*impl_->strides) : nullptr));
}

Tensor& Tensor::detach_() {
  AG_CHECK(!is_view(), "detach_: ", describe(),
           " is a view, and views can't be detached in place; use detach() instead");
  {
    std::lock_guard<std::mutex> lock(impl_->autograd_mutex);
    // Note [Saved values detached in place] (engine/saved_variable.h)
    if (impl_->grad_fn) impl_->grad_fn->mark_output_detached_in_place(impl_->output_nr);
    if (impl_->grad_fn && impl_->retains_grad)
      keep_retains_grad_on_old_node(*impl_, impl_->grad_fn);
    impl_->grad_fn = nullptr;
    impl_->output_nr = 0;
  }
  impl_->set_requires_grad(false);  // a leaf's AccumulateGrad follows (no gradient reaches it)
  return *this;
}

Tensor Tensor::alias_with_shape(const Shape& shape) const {
  AG_CHECK(is_contiguous(), "internal: alias_with_shape of a non-contiguous tensor ", describe());
  return Tensor(Ref<TensorImpl>::make(shape, impl_->dtype, impl_->storage, impl_->offset));
}

Tensor Tensor::alias_with_layout(const Shape& shape, const Shape& strides, int64_t offset) const {
  // Note [Strided tensors]: the row-major strides of the shape are kept as none. As PyTorch's
  // is_contiguous, strides of dims of size 1 do not matter to contiguity, and an empty tensor is
  // contiguous (it keeps no strides).
  bool row_major = true, contiguous = true, empty = false;
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    empty = empty || shape[i] == 0;
    if (strides[i] != expected) {
      row_major = false;
      if (shape[i] != 1) contiguous = false;
    }
    expected *= shape[i];
  }
  const bool keep = !row_major && !empty;
  return Tensor(
      Ref<TensorImpl>::make(shape, impl_->dtype, impl_->storage, offset,
                            keep ? std::make_unique<const Strides>(strides, contiguous) : nullptr));
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined";
  std::string s = to_string(dtype()) + to_string(shape());
  if (!device().is_cpu()) s += " on " + to_string(device());
  return s;
}

}  // namespace ag
