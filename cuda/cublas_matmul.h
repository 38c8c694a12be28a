// Matrix products on CUDA: cuBLAS when it can be loaded, else the builtin tiled GEMM.
//
// The toolkit ships cuBLAS only as a shared library (no libcublas_static.a in CUDA 13 here),
// and the binaries must stay self-contained to run on a GPU machine without the toolkit. So
// cuBLAS is loaded at run time with dlopen: from $AG_CUBLAS_PATH if set, else libcublas.so.13
// through the usual search (LD_LIBRARY_PATH, ld.so.cache), else the toolkit's lib64. When none
// loads, the builtin kernel (gemm.cu) runs instead and cublas_status() says why.
#pragma once

#include <string>

#include "cuda/kernels.h"

namespace ag::cuda {

// C = op(A) op(B) + bias broadcast over C's rows (bias may be null) (+ C when accumulate), as
// described by GemmArgs, on the path gemm_backend() selects: for float, cuBLASLt first
// (cublaslt_matmul.h), then cuBLAS; the builtin kernel when neither loads.
template <typename T>
void gemm(const GemmArgs& args, const T* a, const T* b, const T* bias, T* c);

// "cuBLAS 13.1.1 (libcublas.so.13), FP32" or "builtin tiled GEMM (cuBLAS: <why not>)".
std::string gemm_description();

}  // namespace ag::cuda
