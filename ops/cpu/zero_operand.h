// Note [Products with a zero operand]
// Second derivatives through ReLU multiply zeros: PyTorch's threshold_backward is differentiable
// with a derivative of zeros_like(grad) with respect to relu's result, so the nested grads of the
// hessian workload push all-zero matrices through the layers' products. That is a quarter of the
// big products of y_xx and half of them once the final backward runs (paper/workloads/hessian.h).
// The graph must still hold them (y_xx requires grad and the final backward reaches the weights,
// as in PyTorch), but the kernel need not multiply: when one operand is all zeros and the other
// has no Inf or NaN, every element of A B is a sum of +0 and -0 terms, which is +0 in IEEE
// arithmetic, so the CPU backend writes zeros (or the bias plus +0) and returns the bits the GEMM
// would have returned. An Inf or NaN in the other operand makes 0 * Inf = NaN reach the result,
// so then the product runs. The scans cost two reads of the operands at most; a nonzero operand
// usually ends its scan in the first block. Counted in Counters::products_of_zeros.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ag::ops {

// The bits of T without the sign: zero for +0 and -0, at least the exponent mask for Inf and NaN.
template <typename T>
using MagnitudeBits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <typename T>
MagnitudeBits<T> magnitude_bits(T v) {
  MagnitudeBits<T> bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits & (~MagnitudeBits<T>{0} >> 1);
}

// The exponent's bits: the smallest magnitude of Inf and NaN.
template <typename T>
constexpr auto kInfBits = static_cast<MagnitudeBits<T>>(sizeof(T) == 4 ? 0x7f800000ull
                                                                       : 0x7ff0000000000000ull);

// Scans p[0, n) in blocks (each block is a plain reduction the compiler vectorizes) and stops at
// the first block where done(reduction) holds. Returns whether it stopped early.
template <typename T, typename Reduce, typename Done>
bool any_block(const T* p, int64_t n, Reduce reduce, Done done) {
  constexpr int64_t kBlock = 256;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t end = begin + kBlock < n ? begin + kBlock : n;
    MagnitudeBits<T> acc = 0;
    for (int64_t i = begin; i < end; ++i) acc = reduce(acc, magnitude_bits(p[i]));
    if (done(acc)) return true;
  }
  return false;
}

// Every element is +0 or -0.
template <typename T>
bool all_zero(const T* p, int64_t n) {
  return !any_block(
      p, n, [](auto acc, auto m) { return acc | m; }, [](auto acc) { return acc != 0; });
}

// No element is Inf or NaN.
template <typename T>
bool all_finite(const T* p, int64_t n) {
  return !any_block(
      p, n, [](auto acc, auto m) { return acc > m ? acc : m; },
      [](auto acc) { return acc >= kInfBits<T>; });
}

// Whether the product of A (na elements) and B (nb elements) is exactly +0 everywhere, whatever
// the shapes: one operand all zeros, the other finite.
template <typename T>
bool product_is_zero(const T* a, int64_t na, const T* b, int64_t nb) {
  if (all_zero(a, na)) return all_finite(b, nb);
  if (all_zero(b, nb)) return all_finite(a, na);
  return false;
}

}  // namespace ag::ops
