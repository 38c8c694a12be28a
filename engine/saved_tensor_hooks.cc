// Note [Saved-tensor hooks] (engine/saved_tensor_hooks.h): the scopes, and save_on_cpu.
#include "engine/saved_tensor_hooks.h"

#include "engine/engine_ops.h"
#include "engine/error.h"

namespace ag {

SavedTensorsHooks::SavedTensorsHooks(PackHook pack, UnpackHook unpack)
    : previous_(detail::t_saved_tensor_hooks) {
  AG_CHECK(pack != nullptr && unpack != nullptr,
           "saved_tensors_hooks: both the pack and the unpack hook must be given");
  hooks_ = std::make_shared<const SavedTensorHooks>(
      SavedTensorHooks{std::move(pack), std::move(unpack)});
  detail::t_saved_tensor_hooks = &hooks_;
}

SavedTensorsHooks::~SavedTensorsHooks() { detail::t_saved_tensor_hooks = previous_; }

namespace {

struct OnCpu {
  Device device;
  Tensor copy;
};

}  // namespace

SaveOnCpu::SaveOnCpu()
    : SavedTensorsHooks(
          [](const Tensor& t) -> std::any {
            return OnCpu{t.device(), t.device() == kCPU ? t : engine_ops::to_device(t, kCPU)};
          },
          [](const std::any& packed) {
            const OnCpu& p = std::any_cast<const OnCpu&>(packed);
            return p.device == kCPU ? p.copy : engine_ops::to_device(p.copy, p.device);
          }) {}

}  // namespace ag
