// The CPU kernels that an instruction set speeds up, on raw contiguous arrays. Each instruction
// set has its own table of them (Note [Kernel instruction sets], ops/cpu/isa.h); every kernel runs
// on the calling thread, and ops/cpu/cpu_backend.cc splits large work over threads.
#pragma once

#include <cstdint>

#include "ops/kinds.h"

namespace ag::ops {

// A row-major product C = op(A) op(B): A is [a_rows, a_cols], B is [b_rows, b_cols], op transposes
// when asked, and C is [m, n] = [op(A) rows, op(B) cols].
struct MatmulShape {
  int64_t a_rows, a_cols, b_rows, b_cols;
  bool trans_a, trans_b;
  int64_t m() const { return trans_a ? a_cols : a_rows; }
  int64_t n() const { return trans_b ? b_rows : b_cols; }
  int64_t k() const { return trans_a ? a_rows : a_cols; }
};

// How a large product is cut when op(B) is packed once for all threads (Note [Shared packing],
// ops/cpu/kernels.cc): Eigen's block sizes for the whole product, depth (kc) and columns of C
// (nc); the packing of op(B) as `pieces` tasks of up to `piece` columns each; and its layout:
// nc padded to block_columns, depth_stride elements per kc rows of op(B), packed_size in all.
// Chunks of C's rows that start on a multiple of `panel_rows` run the very kernel paths that one
// GEMM over the whole product runs, so they give its bits.
struct MatmulBlocking {
  int64_t kc, nc, piece, pieces, block_columns, depth_stride, packed_size, panel_rows;
};

template <typename T>
struct CpuKernelsFor {
  // out[i] = a[i] (kind) b[i]
  void (*binary)(BinaryKind kind, const T* a, const T* b, T* out, int64_t n);
  // out[i] = a[i] (kind) b
  void (*binary_scalar)(BinaryKind kind, const T* a, T b, T* out, int64_t n);
  // out[i] = a[i] * ((b[i] * scale) * c[i])
  void (*scaled_product)(const T* a, const T* b, const T* c, T scale, T* out, int64_t n);
  // out[i] = (kind)(in[i]), with `scalar` for the *Scalar kinds
  void (*unary)(UnaryKind kind, const T* in, T* out, int64_t n, double scalar);
  void (*fill)(T* out, int64_t n, T value);
  // out[i] = keep if element first + i of the mask drawn from `seed` is kept (kept_by_counter,
  // ops/counter_rng.h), else 0.
  void (*dropout_mask)(T* out, int64_t first, int64_t n, uint64_t seed, uint64_t threshold, T keep);
  T (*sum)(const T* a, int64_t n);
  // out[c] = sum over r of a[r, c], for a row-major [rows, cols] array.
  void (*column_sum)(const T* a, int64_t rows, int64_t cols, T* out);
  // Rows [r0, r0 + rows) of C = op(A) op(B), plus the bias row (n values) when bias is not null.
  void (*matmul_rows)(const T* a, const T* b, const T* bias, T* c, const MatmulShape& shape,
                      int64_t r0, int64_t rows);
  // The same product with op(B) packed once (Note [Shared packing]): the blocking, then each
  // piece in [0, blocking.pieces) of the packing into `packed`, then any rows
  // of C from the packed op(B). `packed` holds blocking.packed_size elements, 64-byte aligned.
  MatmulBlocking (*matmul_blocking)(const MatmulShape& shape);
  void (*matmul_pack_b)(const T* b, const MatmulShape& shape, const MatmulBlocking& blocking,
                        int64_t piece, T* packed);
  void (*matmul_rows_packed)(const T* a, const T* packed_b, const T* bias, T* c,
                             const MatmulShape& shape, const MatmulBlocking& blocking, int64_t r0,
                             int64_t rows);
};

struct CpuKernels {
  CpuKernelsFor<float> f32;
  CpuKernelsFor<double> f64;
};

// Each instruction set's table (ops/cpu/kernels.cc, compiled once per instruction set).
namespace cpu_baseline {
const CpuKernels& kernels();
}
namespace cpu_avx2 {
const CpuKernels& kernels();
}
namespace cpu_avx512 {
const CpuKernels& kernels();
}

}  // namespace ag::ops
