// The CUDA device: availability, synchronization and settings. Linking //cuda registers the
// CUDA allocator and kernels (ag::DeviceType::kCUDA) at static-initialization time; a build
// made without nvcc links a stub with the same API that reports "built without CUDA".
//
// All CUDA work runs in order on one stream (Note [One stream], cuda/stream.h) of the current
// device, cuda:0; host reads (Tensor::to_vector, item, ops::to) wait for it. cuda/graph.h
// captures a step's work and replays it.
#pragma once

#include <cstdint>
#include <string>

namespace ag::cuda {

// True when this binary was compiled with nvcc (the CUDA kernels are linked in).
bool built_with_cuda();

// True when CUDA kernels can run: built with CUDA, a driver is present and at least one device
// is visible. Never aborts: without a driver the runtime's error is caught and reported.
bool is_available();
int device_count();

// Why is_available() is false ("built without CUDA (...)" or "no CUDA device: ..."), else "".
std::string unavailable_reason();

// A one-line description of the device and the matmul path, for logs and benchmarks.
std::string describe_device();

// Waits for all queued CUDA work (for timing).
void synchronize();

// Marks the region a profiler started with --profile-from-start off measures (Nsight Compute:
// tools/ncu_summary.py), e.g. a benchmark's timed steps without its warm-ups.
void profiler_start();
void profiler_stop();

// --- Matmul settings (mm/addmm/bmm/linear on CUDA). ---
// TF32 tensor cores for float32 products: off by default (plain FP32, as PyTorch's
// torch.backends.cuda.matmul.allow_tf32 = False). Only affects the cuBLAS path.
void set_allow_tf32(bool allow);
bool allow_tf32();

// Which GEMM runs: cuBLAS (loaded at run time, see cublas_matmul.h) or the project's own tiled
// kernel. kCublas falls back to kBuiltin when libcublas cannot be loaded.
enum class GemmBackend { kCublas, kBuiltin };
void set_gemm_backend(GemmBackend backend);
GemmBackend gemm_backend();   // the requested one
bool cublas_loaded();         // whether libcublas was found and every symbol resolved
std::string cublas_status();  // "cuBLAS 130100 from libcublas.so.13" or why it failed
// float product shapes that have a cuBLASLt plan (Note [Products through cuBLASLt],
// cuda/cublaslt_matmul.cc).
int product_plans();

// --- The caching allocator. ---
// Bytes held in the cache (freed by tensors, kept for reuse); not counted in live_bytes().
int64_t cached_bytes();
// Returns every cached block to the driver.
void empty_cache();

}  // namespace ag::cuda
