// Error checks for CUDA runtime calls and kernel launches: failures become ag::Error (via
// throw_cuda_error, defined in runtime.cc), never an abort.
#pragma once

#include <cuda_runtime.h>

#include "cuda/kernels.h"

namespace ag::cuda {

inline void check(cudaError_t code, const char* what) {
  if (code != cudaSuccess) throw_cuda_error(what, static_cast<int>(code));
}

// After a kernel launch: reports launch-configuration errors (asynchronous faults surface at
// the next synchronizing call).
inline void check_launch(const char* what) { check(cudaGetLastError(), what); }

}  // namespace ag::cuda
