#include "engine/saved_variable.h"

#include "engine/accumulate_grad.h"
#include "engine/error.h"
#include "engine/forward_ad.h"
#include "engine/grad_mode.h"
#include "engine/node.h"
#include "engine/saved_tensor_hooks.h"

namespace ag {

// Note [Saved-tensor hooks]: what a packed value keeps instead of its data.
struct SavedVariable::Packed {
  std::shared_ptr<const SavedTensorHooks> hooks;
  std::any value;  // what pack returned
  DType dtype;
  Device device;
};

void SavedVariable::keep(const Tensor& tensor) {
  // Note [Saved values hold no cycles]: nothing is kept as itself.
  if (is_output_) {
    data_ = tensor.detach();
    return;
  }
  if (const std::shared_ptr<Node>& grad_fn = tensor.grad_fn()) {
    data_ = tensor.detach();
    grad_fn_ = grad_fn;
    saved_unpacked_output_ = tensor.impl()->unpacked_output;
    return;
  }
  if (const Ref<TensorImpl>& base = tensor.impl()->view_base) {
    // A view without a history requires grad while its base does, or while its own flag is on
    // (Note [View flags follow the base] in ops/views.h). A base with a history requires grad for
    // good; a leaf base's flag, and the view's own, may change before the value is unpacked, so
    // both AccumulateGrads are kept to read them then.
    if (base->grad_fn != nullptr && !tensor.impl()->requires_grad) {
      data_ = view_requiring_grad(tensor, saved_version_);
      return;
    }
    if (base->grad_fn == nullptr) base_leaf_ = grad_accumulator(Tensor(base));
    requires_grad_ = tensor.impl()->requires_grad;  // the view's own flag, as for any leaf below
  }
  is_leaf_ = true;
  if (requires_grad_) {
    data_ = saved_alias(tensor);  // shared by every save of this leaf; nothing changes it
  } else {
    data_ = tensor.detach();
    leaf_ = grad_accumulator(tensor);
  }
}

SavedVariable::SavedVariable(const Tensor& tensor, bool is_output)
    : is_output_(is_output),
      requires_grad_(tensor.requires_grad()),
      output_nr_(tensor.output_nr()),
      saved_version_(tensor.version()),
      saved_shape_(tensor.shape()) {
  keep(tensor);
  // Note [Forward mode]: a value saved inside a dual level keeps the tangents it carries, on an
  // alias of its own (data_ may be a leaf's saved alias, shared by every save of the leaf).
  if (forward_ad::live()) {
    Tensor carrier = tensor.detach();
    forward_ad::copy_tangents(tensor, carrier);
    if (carrier.impl()->tangents != nullptr) tangents_ = std::move(carrier);
  }
  if (const std::shared_ptr<const SavedTensorHooks>* hooks = current_saved_tensor_hooks()) {
    pack(tensor, *hooks);
  }
}

// Note [Saved-tensor hooks]: hands the value to pack and keeps what it returns instead of data_,
// with what unpack needs to give the value its history back.
void SavedVariable::pack(const Tensor& tensor,
                         const std::shared_ptr<const SavedTensorHooks>& hooks) {
  auto packed = std::make_shared<Packed>();
  packed->hooks = hooks;
  packed->dtype = tensor.dtype();
  packed->device = tensor.device();
  const uint32_t version = tensor.version();
  {
    NoGradGuard no_grad;
    packed->value = hooks->pack(tensor.detach());
  }
  AG_CHECK(tensor.version() == version,
           "A saved tensor pack hook is modifying its input in place (", tensor.describe(),
           "). Tensors provided as input to pack hook cannot be modified by in-place operations "
           "as this can lead to unexpected side-effects.");
  // A leaf that required grad kept its AccumulateGrad through its saved alias; keep it alone.
  if (is_leaf_ && requires_grad_) leaf_ = data_.impl()->grad_accumulator;
  data_ = Tensor();
  packed_ = std::move(packed);
}

// A view of a fresh alias of `data` that requires grad: it requires grad, and a gradient into it
// goes nowhere, as one into a view that requires grad only through its base, without holding
// that base.
Tensor SavedVariable::view_requiring_grad(const Tensor& data, uint32_t version) {
  Tensor view = data.detach(), base = data.detach();
  base.impl()->requires_grad = true;
  view.impl()->view_base = base.impl();
  view.impl()->view_version.store(version, std::memory_order_relaxed);
  return view;
}

const AccumulateGrad& SavedVariable::leaf() const {
  return leaf_ != nullptr ? *leaf_ : *data_.impl()->grad_accumulator;
}

namespace {
std::string slot_name(const char* slot, int index) {
  return index < 0 ? std::string(slot) : std::string(slot) + "[" + std::to_string(index) + "]";
}
// "'mm'", or "'mm' in 'DifferentiableGraphBackward'" when the owner runs several ops' formulas.
std::string saver_name(const Node& owner, const char* op) {
  return op ? "'" + std::string(op) + "' in '" + owner.name() + "'" : "'" + owner.name() + "'";
}
}  // namespace

// Note [Forward mode]: the value carries the tangents it carried when saved, so that a formula
// run inside a dual level (forward-over-reverse) reads them; on an object of its own.
void SavedVariable::give_tangents(Tensor& value) const {
  if (!forward_ad::live()) return;
  if (value.is_same(data_)) {
    const auto& leaf = data_.impl()->grad_accumulator;
    value = leaf != nullptr ? leaf_stand_in(data_, leaf) : data_.detach();
  }
  forward_ad::copy_tangents(tangents_, value);
}

Tensor SavedVariable::unpack_value(const Node& owner, const char* slot, int index,
                                   const char* op) const {
  if (released_) {
    fail("Trying to backward through the graph a second time: the value '", slot_name(slot, index),
         "' of shape ", to_string(saved_shape_), " saved by ", saver_name(owner, op),
         " was already freed. Pass retain_graph to the first backward()/grad() call if you need "
         "to backward through the graph again.");
  }
  if (packed_ != nullptr) return unpack_packed(owner, slot, index, op);
  // Note [Saved values detached in place]
  const bool detached = !is_leaf_ && !is_output_ && grad_fn_ != nullptr &&
                        !saved_unpacked_output_ && grad_fn_->output_detached_in_place(output_nr_);
  if (detached && !saved_by_function_) {
    fail(
        "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_(). "
        "This is not supported, please use out-of-place `.detach()` instead (the value '",
        slot_name(slot, index), "' of shape ", to_string(saved_shape_), " saved by ",
        saver_name(owner, op), ").");
  }
  if (data_.version() != saved_version_) {
    fail(
        "One of the tensors needed for gradient computation has been modified by an in-place "
        "operation: the value '",
        slot_name(slot, index), "' of shape ", to_string(saved_shape_), " saved by ",
        saver_name(owner, op), " is at version ", data_.version(), "; expected version ",
        saved_version_, ".");
  }
  if (is_leaf_) {
    // The leaf's requires_grad may have changed since (requires_grad_() does not bump the
    // version); the alias saved is right unless it did.
    const bool requires_grad = leaf().variable_requires_grad();
    if (!requires_grad && base_leaf_ && base_leaf_->variable_requires_grad()) {
      return view_requiring_grad(data_, saved_version_);
    }
    if (requires_grad == requires_grad_) return data_;
    return requires_grad_ ? data_.detach() : leaf_stand_in(data_, leaf_);
  }
  if (detached || (grad_fn_ == nullptr && (!is_output_ || !requires_grad_))) return data_;
  return with_history(data_, owner);
}

// Re-attaches the history (the owner for an output) so double backward sees it.
Tensor SavedVariable::with_history(const Tensor& data, const Node& owner) const {
  Tensor t = data.detach();
  t.impl()->requires_grad = true;
  t.impl()->grad_fn = grad_fn_ ? grad_fn_ : std::const_pointer_cast<Node>(owner.shared_from_this());
  t.impl()->output_nr = output_nr_;
  // Note [Saved values detached in place]
  t.impl()->unpacked_output = grad_fn_ == nullptr || saved_unpacked_output_;
  return t;
}

// Note [Saved-tensor hooks]: unpack's tensor, checked, with the history the value had when saved
// (no version check: the hooks own the value).
Tensor SavedVariable::unpack_packed(const Node& owner, const char* slot, int index,
                                    const char* op) const {
  const Packed& p = *packed_;
  const Tensor data = p.hooks->unpack(p.value);
  AG_CHECK(data.defined() && data.shape() == saved_shape_ && data.dtype() == p.dtype &&
               data.device() == p.device,
           "saved-tensor unpack hook: the value '", slot_name(slot, index), "' saved by ",
           saver_name(owner, op), " was ", to_string(p.dtype), to_string(saved_shape_), " on ",
           to_string(p.device), ", and unpack gave back ",
           data.defined() ? data.describe() + " on " + to_string(data.device())
                          : std::string("an undefined tensor"),
           "; it must give back a tensor of the saved value's shape, dtype and device");
  if (is_leaf_) {
    const bool requires_grad = leaf().variable_requires_grad();
    if (!requires_grad && base_leaf_ && base_leaf_->variable_requires_grad()) {
      return view_requiring_grad(data, saved_version_);
    }
    return requires_grad ? leaf_stand_in(data, leaf_) : data.detach();
  }
  // Neither a leaf, an output nor with a history: a view that requires grad only through a base
  // with a history, whose data_ keep() made by view_requiring_grad.
  if (!is_output_ && grad_fn_ == nullptr) return view_requiring_grad(data, saved_version_);
  if (grad_fn_ == nullptr && !requires_grad_) return data.detach();
  return with_history(data, owner);
}

Node::SavedValue SavedVariable::describe_as(std::string name) const {
  using State = Node::SavedValue::State;
  if (released_) return {std::move(name), State::kReleased, "", 0};
  if (packed_ != nullptr) {
    return {std::move(name), State::kKept,
            "packed " + to_string(packed_->dtype) + to_string(saved_shape_), 0};
  }
  if (!data_.defined()) return {std::move(name), State::kNotKept, "", 0};
  return {std::move(name), State::kKept, data_.describe(), data_.nbytes()};
}

void SavedVariable::release() {
  data_ = Tensor();
  packed_ = nullptr;  // the packed object is freed with it, as PyTorch's
  grad_fn_ = nullptr;
  leaf_ = nullptr;
  tangents_ = Tensor();
  released_ = true;
}

}  // namespace ag
