// AG_HOST_DEVICE marks inline functions that both host code and CUDA kernels call.
#pragma once

#ifdef __CUDACC__
#define AG_HOST_DEVICE __host__ __device__
#else
#define AG_HOST_DEVICE
#endif
