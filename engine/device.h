#pragma once

#include <string>

namespace ag {

enum class DeviceType { kCPU = 0, kCUDA = 1 };
constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;

  bool is_cpu() const { return type == DeviceType::kCPU; }
  bool is_cuda() const { return type == DeviceType::kCUDA; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

inline const Device kCPU{DeviceType::kCPU, 0};

inline std::string to_string(const Device& d) {
  return d.is_cpu() ? "cpu" : "cuda:" + std::to_string(d.index);
}

}  // namespace ag
