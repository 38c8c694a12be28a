// The CUDA kernels' host interface: raw device pointers and sizes, no Tensor. cuda_backend.cc
// validates and lays out tensors, then calls these; the .cu files (compiled by nvcc, which sees
// only this package's headers) implement them. Every launcher queues work on the default
// stream and returns at once; each is instantiated for float and double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/layout.h"
#include "ops/kinds.h"

namespace ag::cuda {

// Device code switches on the ops' own kinds (ops/kinds.h).
using BinaryOp = ops::BinaryKind;
using UnaryOp = ops::UnaryKind;

// out = value
template <typename T>
void fill(T* out, int64_t n, T value);
// out = a (op) b. With `layout` null all three are contiguous with n elements; otherwise a and
// b are read through layout->stride[0] and [1]. out may alias a (in-place ops).
template <typename T>
void binary(BinaryOp op, const T* a, const T* b, T* out, int64_t n, const Layout* layout);
// out = op(a, scalar), all contiguous.
template <typename T>
void unary(UnaryOp op, const T* a, T* out, int64_t n, T scalar);
// out = a * ((b * scale) * c), all contiguous (ops::Backend::scaled_product).
template <typename T>
void scaled_product(const T* a, const T* b, const T* c, T* out, int64_t n, T scale);
// dst (contiguous, n elements) = src read through layout.stride[0] (broadcast, transpose).
template <typename T>
void strided_copy(const T* src, T* dst, int64_t n, const Layout& layout);

// out[0] = sum of in[0..n).
template <typename T>
void sum_all(const T* in, T* out, int64_t n);
// Sums contiguous `in` down to contiguous `out` as planned by plan_sum_to (layout.h).
template <typename T>
void sum_to(const T* in, T* out, const ReducePlan& plan);

// log_softmax over the middle dim of a contiguous [outer, len, inner] array.
template <typename T>
void log_softmax(const T* in, T* out, int64_t outer, int64_t len, int64_t inner);
// out[r] = in[r, targets[r]] for a contiguous [rows, cols] array (targets on the host).
template <typename T>
void gather_rows(const T* in, T* out, int64_t rows, int64_t cols,
                 const std::vector<int64_t>& targets);
// out [rows, cols] = 0 except out[r, targets[r]] = value (targets on the host).
template <typename T>
void nll_pattern(T* out, int64_t rows, int64_t cols, const std::vector<int64_t>& targets, T value);
// out[i] = 1/keep_prob if element i of the mask drawn from `seed` is kept (kept_by_counter,
// ops/counter_rng.h, as on the CPU) else 0.
template <typename T>
void dropout_mask(T* out, int64_t n, double keep_prob, uint64_t seed);

// Row-major C[b] = op(A[b]) @ op(B[b]) (+ C[b] when accumulate), b < batch; op(X) is X or X^T.
// op(A) is [m, k], op(B) is [k, n]; lda/ldb/ldc are the row lengths of A, B, C as stored.
struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // between batch entries, in elements
  int64_t batch = 1;
  bool accumulate = false;  // C += product instead of C = product
};
// The project's own tiled GEMM (cublas_matmul.cc uses cuBLAS when it can).
template <typename T>
void gemm_builtin(const GemmArgs& args, const T* a, const T* b, T* c);
// The product of `args` when op(A) or op(B) holds only +0 and NaN (Note [Known zeros]), written
// without multiplying (zero_product.cu): C[i][j] = bias[j] (or nothing) + (NaN if row i of op(A)
// or column j of op(B) holds an Inf or NaN, else +0), the GEMM's values. An operand known to be
// all +0 (a_all_zero, b_all_zero) is not read. bias may be null; never accumulates.
template <typename T>
void zero_product(const GemmArgs& args, bool a_all_zero, bool b_all_zero, const T* a, const T* b,
                  const T* bias, T* c);
// out [batch, rows, cols] (contiguous) = bias [cols] broadcast over rows: addmm's C before
// C += A @ B.
template <typename T>
void broadcast_rows(const T* bias, T* out, int64_t rows_total, int64_t cols);

// Device scratch memory from the caching allocator (counted in the CUDA stats while held).
// Freeing right after queueing a kernel that uses it is safe: all work is on one stream, so a
// later user of the block runs after that kernel.
void* scratch_allocate(size_t bytes);
void scratch_free(void* ptr, size_t bytes);

class Scratch {
 public:
  explicit Scratch(size_t bytes) : bytes_(bytes), ptr_(scratch_allocate(bytes)) {}
  ~Scratch() { scratch_free(ptr_, bytes_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  size_t bytes_;
  void* ptr_;
};

// Throws ag::Error("CUDA error in <what>: <name>: <description>") for a cudaError_t code.
[[noreturn]] void throw_cuda_error(const char* what, int code);

}  // namespace ag::cuda
