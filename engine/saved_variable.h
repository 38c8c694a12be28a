#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/node.h"
#include "engine/tensor.h"

namespace ag {

class AccumulateGrad;
struct SavedTensorHooks;

// A tensor saved by a forward op for its backward. Two rules:
// - Version check: unpack() throws if the tensor was modified in place after it was saved.
// - No cycles (Note [Saved values hold no cycles]).
//
// Note [Saved values hold no cycles]
// A node may own only nodes older than itself, so the graph can never own itself:
// - an op's own output is stored without its grad_fn (that grad_fn is the very node that owns
//   this SavedVariable); unpack() re-attaches the owner, as PyTorch does;
// - a non-leaf input is stored as an alias of its data plus the grad_fn and output_nr it had
//   when saved (older than the owner), not as the tensor object itself. PyTorch keeps the object,
//   and an in-place op that later writes into that tensor with the owner's result as the other
//   operand (a = x.clone(); y = a * w; a.add_(y)) gives the object a grad_fn that reaches the
//   owner: owner -> a -> AddBackward -> owner, a cycle PyTorch 2.15 leaks. The write bumps the
//   version, so unpack() would refuse the value anyway: the alias sees exactly what the object
//   would have (a tensor's history only changes together with its version);
// - a leaf is stored as an alias of its data plus its AccumulateGrad, which points back at the
//   leaf without owning it (engine/accumulate_grad.h); while the leaf requires grad that alias
//   is the leaf's own TensorImpl::saved_alias, shared by every save of the leaf and changed by
//   none (the leaf owns it, it owns the AccumulateGrad, which does not own the leaf). PyTorch keeps
//   the leaf object, and an in-place op that later moves the leaf into the graph's interior with
//   the owner's result as the other operand (y = x / a; a.copy_(y), `a` not requiring grad) gives
//   the object a grad_fn that reaches the owner: owner -> a -> CopyBackward -> owner, again a cycle
//   PyTorch 2.15 leaks. unpack() reads the leaf's requires_grad through the AccumulateGrad when it
//   runs, so the value it gives is what the leaf object would be (a leaf, with the leaf's current
//   requires_grad, or its last one if the caller dropped it, whose gradient flows into the leaf's
//   .grad); the write that moves the leaf bumps the version, so unpack() refuses the value then,
//   as it would the object;
// - a view without a history or a flag of its own (it requires grad while its base does) is a
//   leaf as above, plus its base's AccumulateGrad when the base is a leaf, whose flag may change
//   before unpack(). While the base requires grad (and the view's own flag is off), unpack()
//   gives a view of a fresh alias that requires grad: it requires grad, and its gradient goes
//   nowhere, as the view's, without holding the base.
//
// While saved-tensor hooks are active (Note [Saved-tensor hooks], engine/saved_tensor_hooks.h),
// the value is packed instead: only what pack returned is kept, with the history above.
//
// Note [Saved values detached in place]
// PyTorch keeps a saved non-leaf input as the tensor object and reads its grad_fn at unpack; after
// detach_() on that tensor it has none, and unpack refuses the value ("Trying to use a saved
// tensor that has been detached in-place"), before the version check. Here the value is an alias
// (above), so detach_() marks the output of the tensor's node that it cuts off, and unpack()
// refuses a non-leaf input saved with that node and output. A saved output and a packed value
// keep their history, as in PyTorch. So does a saved output unpacked under create_graph: PyTorch's
// unpack makes a tensor of its own with the output's history, which a derivative's op may save in
// turn, and which a later detach_() of the output leaves as it is (tanh_backward's saved result;
// found by fuzz --against pytorch): such a tensor is marked (TensorImpl::unpacked_output), and its
// saves are not refused. A custom Function's saved tensor is not refused (PyTorch
// unpacks those with the Function's node to fall back on) and unpacks as the tensor is now, a leaf
// that does not require grad (found by fuzz --against pytorch).
class SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& tensor, bool is_output);

  // `owner` is the node that saved it (a saved output gets it back as grad_fn). `slot`, with
  // `index` if not -1, names the value in error messages ("other", "saved_tensors[1]"); the
  // messages are only built when they are thrown.
  // `op` names the op that saved it where `owner` stands for several (Note [Nodes that stand for
  // several ops]): messages then say "saved by 'mm' in 'DifferentiableGraphBackward'".
  // Inline: every formula's read comes here, and the tangents are almost never there.
  Tensor unpack(const Node& owner, const char* slot, int index = -1,
                const char* op = nullptr) const {
    Tensor value = unpack_value(owner, slot, index, op);
    if (__builtin_expect(tangents_.defined(), 0)) give_tangents(value);
    return value;
  }
  // A custom Function's save_for_backward (Note [Saved values detached in place]).
  void mark_saved_by_function() { saved_by_function_ = true; }
  void release();
  bool defined() const { return data_.defined() || packed_ != nullptr; }
  bool released() const { return released_; }
  // The bytes this holds itself: none for a packed value, whose hooks keep what they keep.
  size_t nbytes() const { return data_.defined() ? data_.nbytes() : 0; }
  // The entry describe_graph() shows for this value, under `name`.
  Node::SavedValue describe_as(std::string name) const;

 private:
  struct Packed;

  [[gnu::always_inline]] inline void keep(const Tensor& tensor);
  void pack(const Tensor& tensor, const std::shared_ptr<const SavedTensorHooks>& hooks);
  Tensor unpack_value(const Node& owner, const char* slot, int index, const char* op) const;
  void give_tangents(Tensor& value) const;
  Tensor unpack_packed(const Node& owner, const char* slot, int index, const char* op) const;
  Tensor with_history(const Tensor& data, const Node& owner) const;
  static Tensor view_requiring_grad(const Tensor& data, uint32_t version);
  const AccumulateGrad& leaf() const;

  // An alias of the saved tensor's data, without history; a leaf's that required grad when saved
  // is the leaf's saved_alias, which holds its AccumulateGrad (what unpack() gives while the leaf
  // requires grad).
  Tensor data_;
  std::shared_ptr<Node> grad_fn_;  // a non-leaf input's grad_fn when saved
  // A leaf input's AccumulateGrad when data_ does not hold it (the leaf did not require grad when
  // saved): one owner per saved leaf, not two.
  std::shared_ptr<AccumulateGrad> leaf_;
  // For a saved view without a history or a flag of its own: its leaf base's AccumulateGrad,
  // whose flag the view follows.
  std::shared_ptr<AccumulateGrad> base_leaf_;
  bool is_leaf_ = false;
  bool is_output_ = false;
  bool requires_grad_ = false;
  uint32_t output_nr_ = 0;
  uint32_t saved_version_ = 0;
  bool released_ = false;
  bool saved_by_function_ = false;
  bool saved_unpacked_output_ = false;  // Note [Saved values detached in place]
  Shape saved_shape_;                   // kept after release for error messages
  // Note [Forward mode]: an alias that carries the value's tangents when it carried any when
  // saved; else undefined.
  Tensor tangents_;
  // What pack returned, in place of data_ (Note [Saved-tensor hooks]); null when not packed.
  std::shared_ptr<const Packed> packed_;
};

}  // namespace ag
