#pragma once

#include <cstdint>
#include <vector>

#include "engine/device.h"
#include "engine/memory/device_table.h"
#include "engine/tensor.h"
#include "ops/kinds.h"
#include "ops/view_layout.h"

namespace ag::ops {

// Note [Strided operands]
// The compute kernels of one device type. Ops validate arguments (names and shapes in errors)
// before calling these; kernels assume valid inputs of one dtype and device, and always write
// fresh contiguous outputs except binary_inplace and copy, which write into their first operand.
// Operands may have any strides (Note [Strided tensors], engine/tensor.h): a kernel that reads
// them through a strided loop takes them as they are (the CPU's binary ops and copies); every
// other reads dense(operand), a contiguous copy made only for a non-contiguous operand. A
// non-contiguous destination is written through scatter().
class Backend {
 public:
  virtual ~Backend() = default;
  // `t` itself when contiguous, else a contiguous copy of its elements (no autograd).
  Tensor dense(const Tensor& t);
  // A product's operand as the GEMM reads it: `t` when contiguous; when t is the transpose of a
  // contiguous tensor in its last two dims (t() of a weight, a transposed view), that tensor,
  // with *transpose flipped, so the GEMM reads it in place; else dense(t).
  Tensor gemm_operand(const Tensor& t, bool* transpose);
  // Writes the elements of `src` (contiguous, of shape at.sizes), in row-major order, to the
  // elements of dst's storage at `at` (offset and strides in elements from dst's first element),
  // or adds them there when `accumulate`, one after the other: an element that `at` reaches at
  // several indices gets their sum. The default goes through host memory.
  virtual void scatter(const Tensor& dst, const Layout& at, const Tensor& src, bool accumulate);
  virtual Tensor binary(BinaryKind kind, const Tensor& a, const Tensor& b, const Shape& out) = 0;
  // a = a (kind) b, with b broadcast to a's shape.
  virtual void binary_inplace(BinaryKind kind, const Tensor& a, const Tensor& b) = 0;
  virtual Tensor unary(UnaryKind kind, const Tensor& a, double scalar) = 0;
  // out = a * ((b * scale) * c) over three tensors of one shape, in that order (tanh_backward's
  // derivative w.r.t. its result; Note [Fused formula kernels] in ops/fused.cc). The
  // default runs the three kernels it stands for, in the same order, so a backend that fuses
  // them must give the same bits.
  virtual Tensor scaled_product(const Tensor& a, const Tensor& b, const Tensor& c, double scale);
  // sum += a (kind) b, and sum += a * ((b * scale) * c), over tensors of one shape: a formula's
  // values added into the gradient already waiting for them (Note [Sums fused into formulas],
  // engine/engine.cc). The defaults write the values to a new tensor and add it with
  // binary_inplace; a backend that fuses the two must give their bits.
  virtual void sum_into_binary(const Tensor& sum, BinaryKind kind, const Tensor& a,
                               const Tensor& b);
  virtual void sum_into_scaled_product(const Tensor& sum, const Tensor& a, const Tensor& b,
                                       const Tensor& c, double scale);
  virtual Tensor fill(const Shape& shape, double value, DType dtype, Device device) = 0;
  virtual void copy(const Tensor& dst, const Tensor& src) = 0;  // same numel, may broadcast src
  virtual Tensor sum_all(const Tensor& a) = 0;
  // Reduces `a` to `shape` by summing the broadcast dims (shape broadcasts to a's shape).
  virtual Tensor sum_to(const Tensor& a, const Shape& shape) = 0;
  // dst[i] = src at the position that i's index has under `src_strides` (in elements); dst
  // contiguous.
  virtual void strided_copy(const Tensor& src, const std::vector<int64_t>& src_strides,
                            const Tensor& dst) = 0;
  // Device-independent, on top of copy() and strided_copy() (ops/backend.cc). A new contiguous
  // tensor of `a` broadcast to `shape`, for kernels that read same-shape operands (where,
  // masked_fill); the op broadcast_to is a view (ops/view_ops.cc).
  Tensor broadcast_to(const Tensor& a, const Shape& shape);
  // out = op(a) @ op(b) (+ bias broadcast over rows when given); op transposes when asked.
  // Batched when a and b are 3-D.
  virtual Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b,
                        const Tensor* bias) = 0;
  virtual Tensor log_softmax(const Tensor& a, int64_t dim) = 0;
  // out[row] = a[row, targets[row]] for a [N, C] tensor (nll_loss's forward).
  virtual Tensor gather_rows(const Tensor& a, const std::vector<int64_t>& targets) = 0;
  // -scale at (row, targets[row]) of a [N, C] tensor, 0 elsewhere (nll_loss's gradient pattern).
  virtual Tensor nll_grad_pattern(const Shape& shape, const std::vector<int64_t>& targets,
                                  double scale, DType dtype, Device device) = 0;
  // Elements are 1/keep_prob with probability keep_prob, else 0; deterministic in (seed, index).
  virtual Tensor dropout_mask(const Shape& shape, double keep_prob, uint64_t seed, DType dtype,
                              Device device) = 0;
};

Backend* cpu_backend();
namespace detail {
inline DeviceTable<Backend> backends;
}  // namespace detail
[[noreturn]] void fail_no_backend(const Device& device);
inline Backend& backend_for(const Device& device) {
  Backend* b = detail::backends.find(device.type, &cpu_backend);
  if (!b) fail_no_backend(device);
  return *b;
}
void register_backend(DeviceType type, Backend* backend);

// A contiguous copy of `t` in new storage, not recorded (no autograd).
Tensor copy_of(const Tensor& t);

}  // namespace ag::ops
