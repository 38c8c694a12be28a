// float products through cuBLASLt, the bias added in the GEMM's epilogue (Note [Products through
// cuBLASLt]). Loaded at run time beside cuBLAS (cublas_matmul.h); cublas_matmul.cc falls back to
// cublasSgemm when this declines.
#pragma once

#include <string>

#include "cuda/kernels.h"

namespace ag::cuda::lt {

// Loads libcublasLt from `dir` (where libcublas was found; empty: the loader's search), once.
// Returns "" or why it is unavailable.
std::string load(const std::string& dir);
bool loaded();

// C = op(A) op(B) + bias broadcast over C's rows (bias may be null) (+ C when args.accumulate),
// float32 (TF32 when allowed). Returns false, having queued nothing, when cuBLASLt has no
// kernel for the product (the caller then runs another path).
bool matmul(const GemmArgs& args, const float* a, const float* b, const float* bias, float* c);

// How many product shapes have a plan (for tests).
int plans();

}  // namespace ag::cuda::lt
