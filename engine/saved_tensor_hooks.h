#pragma once

// Saved-tensor hooks: functions that take over keeping the values ops save for backward (Note
// [Saved-tensor hooks]), and two users of them: save_on_cpu and checkpoint() (engine/checkpoint.h).

#include <any>
#include <functional>
#include <memory>

#include "engine/tensor.h"

namespace ag {

// Note [Saved-tensor hooks]
// As torch.autograd.graph.saved_tensors_hooks(pack, unpack) in PyTorch 2.15. While a
// SavedTensorsHooks scope is open on a thread, every value an op recorded on that thread saves
// for its backward (an OpNode's slots, a custom Function's save_for_backward, a compiled group's
// values) is handed to `pack`, under no_grad, and the SavedVariable keeps what pack returned
// instead of the value: no tensor of the engine's is kept alive by it. Backward hands that object
// to `unpack` for the value's data, and attaches the history the value had (its grad_fn, or its
// leaf's AccumulateGrad) as for any saved value. The innermost open scope applies; a value keeps
// the hooks it was packed with.
//
// The guards (Note [Guarded saves], ops/spec.h) decide what is saved before pack runs: a slot no
// formula of the node can read is never packed, so the seeds' cuts show as fewer pack calls.
//
// PyTorch's rules, each pinned in engine/tests/saved_tensor_hooks_test.cc:
// - pack receives each value an op keeps, as an alias of its data without a history: never the
//   tensor itself, so that a hook that keeps what it receives keeps no node alive (Note [Saved
//   values hold no cycles], engine/saved_variable.h). PyTorch hands over the input itself, or the
//   op's output with its node, and a hook that keeps either may keep a cycle;
// - a pack that writes into its input raises ("A saved tensor pack hook is modifying its input in
//   place"), and the op that saved it fails;
// - there is no version check on a packed value: the hooks own it, and PyTorch cannot follow a
//   version through them either;
// - unpack runs on each unpack (a second backward through a retained graph unpacks again); a
//   released value is freed with its packed object, and a later unpack raises as any freed one.
// One rule of the engine's own: unpack must give back a tensor of the saved value's shape, dtype
// and device, or the unpack raises naming the value and its op. PyTorch hands any tensor to the
// formula, which then fails on the shapes or computes in another dtype; the engine's kernels
// would read the wrong memory instead.
using PackHook = std::function<std::any(const Tensor&)>;
using UnpackHook = std::function<Tensor(const std::any&)>;

struct SavedTensorHooks {
  PackHook pack;
  UnpackHook unpack;
};

// Opens a scope: values saved on this thread until it closes go through pack and unpack. Scopes
// nest; close them in reverse order of opening (as C++ scopes do).
class SavedTensorsHooks {
 public:
  SavedTensorsHooks(PackHook pack, UnpackHook unpack);
  ~SavedTensorsHooks();
  SavedTensorsHooks(const SavedTensorsHooks&) = delete;
  SavedTensorsHooks& operator=(const SavedTensorsHooks&) = delete;

 private:
  std::shared_ptr<const SavedTensorHooks> hooks_;
  const std::shared_ptr<const SavedTensorHooks>* previous_;  // the enclosing scope's, or null
};

// As torch.autograd.graph.save_on_cpu(): pack keeps each saved value on the CPU (a device tensor
// is copied to the host; a CPU one is kept as it is, as PyTorch's tensor.cpu() keeps it), and
// unpack copies it back to the value's device.
class SaveOnCpu : public SavedTensorsHooks {
 public:
  SaveOnCpu();
};

namespace detail {
// The innermost scope's hooks on this thread; null when none is open. A plain pointer read by
// every save (one TLS load); the scopes own the hooks.
inline thread_local const std::shared_ptr<const SavedTensorHooks>* t_saved_tensor_hooks = nullptr;
}  // namespace detail

// The hooks a value saved now on this thread goes through, or null.
inline const std::shared_ptr<const SavedTensorHooks>* current_saved_tensor_hooks() {
  return detail::t_saved_tensor_hooks;
}

}  // namespace ag
