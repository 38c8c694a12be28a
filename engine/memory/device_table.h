#pragma once

#include <atomic>

#include "engine/device.h"

namespace ag {

// One entry per device type (the allocators, the kernel backends). Every op looks entries up, so
// a lookup is one acquire load, a plain load on x86. The CPU entry is filled on first use by
// make_cpu, a function returning a static object; the others are registered by their device's
// library at static initialization (a constant-initialized table, so any order works).
template <typename T>
class DeviceTable {
 public:
  template <typename MakeCpu>
  T* find(DeviceType type, MakeCpu make_cpu) {
    T* entry = entries_[static_cast<int>(type)].load(std::memory_order_acquire);
    if (entry || type != DeviceType::kCPU) return entry;
    return fill_cpu(make_cpu);
  }
  void set(DeviceType type, T* entry) {
    entries_[static_cast<int>(type)].store(entry, std::memory_order_release);
  }

 private:
  template <typename MakeCpu>
  [[gnu::noinline]] T* fill_cpu(MakeCpu make_cpu) {
    T* cpu = make_cpu();
    set(DeviceType::kCPU, cpu);
    return cpu;
  }

  std::atomic<T*> entries_[kNumDeviceTypes] = {};
};

}  // namespace ag
