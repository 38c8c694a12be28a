// Device discovery and errors: is_available() probes the runtime once and caches the answer.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <mutex>
#include <string>

#include "cuda/check.h"
#include "cuda/cublas_matmul.h"
#include "cuda/cuda.h"
#include "cuda/kernels.h"
#include "cuda/stream.h"
#include "engine/error.h"

namespace ag::cuda {
namespace {

// The kernels are built for sm_80 and sm_90 (plus sm_90 PTX): older GPUs cannot run them.
constexpr int kMinComputeMajor = 8;

struct Probe {
  int count = 0;       // usable devices
  std::string reason;  // why there are none
  std::string name;    // device 0
  int major = 0, minor = 0, sms = 0;
  size_t memory = 0;
};

std::string error_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

// With the static runtime and no driver installed, cudaGetDeviceCount returns an error
// (cudaErrorInsufficientDriver or cudaErrorNoDevice) instead of aborting: report it.
Probe run_probe() {
  Probe p;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear it, so later calls do not see a stale error
    p.reason = "no CUDA device: cudaGetDeviceCount failed: " + error_text(e);
    return p;
  }
  if (count == 0) {
    p.reason = "no CUDA device: cudaGetDeviceCount found 0 devices";
    return p;
  }
  cudaDeviceProp prop{};
  const cudaError_t pe = cudaGetDeviceProperties(&prop, 0);
  if (pe != cudaSuccess) {
    cudaGetLastError();
    p.reason = "no CUDA device: cudaGetDeviceProperties failed: " + error_text(pe);
    return p;
  }
  p.name = prop.name;
  p.major = prop.major;
  p.minor = prop.minor;
  p.sms = prop.multiProcessorCount;
  p.memory = prop.totalGlobalMem;
  if (prop.major < kMinComputeMajor) {
    p.reason = "no usable CUDA device: " + p.name + " is sm_" + std::to_string(p.major) +
               std::to_string(p.minor) + ", older than the sm_80 this build targets";
    return p;
  }
  p.count = count;
  return p;
}

const Probe& probe() {
  static const Probe p = run_probe();
  return p;
}

}  // namespace

bool built_with_cuda() { return true; }
bool is_available() { return probe().count > 0; }
int device_count() { return probe().count; }
std::string unavailable_reason() { return probe().reason; }

std::string describe_device() {
  const Probe& p = probe();
  if (p.count == 0) return p.reason;
  return p.name + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
         std::to_string(p.sms) + " SMs, " + std::to_string(p.memory >> 20) +
         " MiB); matmul: " + gemm_description();
}

cudaStream_t stream() {
  static const cudaStream_t s = [] {
    cudaStream_t created = nullptr;
    check(cudaStreamCreateWithFlags(&created, cudaStreamDefault), "creating the stream");
    return created;  // never destroyed: work may be queued on it at exit
  }();
  return s;
}

void synchronize() {
  if (is_available()) check(cudaDeviceSynchronize(), "synchronize");
}

void profiler_start() {
  if (is_available()) check(cudaProfilerStart(), "profiler_start");
}
void profiler_stop() {
  if (is_available()) check(cudaProfilerStop(), "profiler_stop");
}

void throw_cuda_error(const char* what, int code) {
  const auto e = static_cast<cudaError_t>(code);
  fail("CUDA error in ", what, ": ", error_text(e));
}

}  // namespace ag::cuda
