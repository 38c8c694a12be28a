// ops::Backend for CUDA tensors: lays tensors out for the kernels in kernels.h (raw pointers,
// merged broadcast strides) and allocates outputs through the caching allocator. Linking this
// file (//cuda is alwayslink) registers the allocator and the kernels for DeviceType::kCUDA.
#include <cuda_runtime.h>

#include <utility>

#include "cuda/check.h"
#include "cuda/cublas_matmul.h"
#include "cuda/cuda_allocator.h"
#include "cuda/kernels.h"
#include "cuda/stream.h"
#include "engine/counters.h"
#include "engine/error.h"
#include "engine/options.h"
#include "ops/backend.h"
#include "ops/strided_loop.h"

namespace ag::cuda {
namespace {

using ops::BinaryKind;
using ops::UnaryKind;

Layout layout_for(const Shape& shape, const std::vector<std::vector<int64_t>>& strides) {
  Layout l;
  AG_CHECK(make_layout(shape, strides, &l), "cuda: broadcasting over shape ", to_string(shape),
           " needs more than ", kMaxDims, " dims after merging");
  return l;
}

class CudaBackend final : public ops::Backend {
 public:
  Tensor binary(BinaryKind kind, const Tensor& a, const Tensor& b, const Shape& shape) override {
    Tensor out = Tensor::empty(shape, a.dtype(), a.device());
    binary_into(kind, a, b, out);
    return out;
  }

  void binary_inplace(BinaryKind kind, const Tensor& a, const Tensor& b) override {
    if (a.is_contiguous()) return binary_into(kind, a, b, a);
    // Note [Strided operands] (ops/backend.h): a non-contiguous destination is written back.
    scatter(a, ops::Layout{a.shape(), a.strides(), 0}, binary(kind, a, b, a.shape()), false);
  }

  Tensor unary(UnaryKind kind, const Tensor& a_in, double scalar) override {
    const Tensor a = dense(a_in);
    Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      cuda::unary<T>(kind, a.data<T>(), out.data<T>(), a.numel(), static_cast<T>(scalar));
    });
    return out;
  }

  // One kernel, one pass, the bits of the three kernels it stands for (Note [Fused formula
  // kernels], ops/elementwise.cc).
  Tensor scaled_product(const Tensor& a_in, const Tensor& b_in, const Tensor& c_in,
                        double scale) override {
    const Tensor a = dense(a_in), b = dense(b_in), c = dense(c_in);
    Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      cuda::scaled_product<T>(a.data<T>(), b.data<T>(), c.data<T>(), out.data<T>(), a.numel(),
                              static_cast<T>(scale));
    });
    return out;
  }

  Tensor fill(const Shape& shape, double value, DType dtype, Device device) override {
    Tensor out = Tensor::empty(shape, dtype, device);
    dispatch_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      cuda::fill<T>(out.data<T>(), out.numel(), static_cast<T>(value));
    });
    return out;
  }

  void copy(const Tensor& dst, const Tensor& src) override {
    if (!dst.is_contiguous()) {  // Note [Strided operands] (ops/backend.h)
      const Tensor values = Tensor::empty(dst.shape(), dst.dtype(), dst.device());
      copy(values, src);
      return scatter(dst, ops::Layout{dst.shape(), dst.strides(), 0}, values, false);
    }
    if (src.numel() == dst.numel() && src.is_contiguous()) {
      if (dst.raw_data() != src.raw_data() && dst.nbytes() > 0) {
        check(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), dst.nbytes(),
                              cudaMemcpyDeviceToDevice, stream()),
              "copy");
      }
      return;
    }
    strided_copy(src, ops::broadcast_strides(src.shape(), src.strides(), dst.shape()), dst);
  }

  Tensor sum_all(const Tensor& a_in) override {
    const Tensor a = dense(a_in);
    Tensor out = Tensor::empty({}, a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      cuda::sum_all<T>(a.data<T>(), out.data<T>(), a.numel());
    });
    return out;
  }

  Tensor sum_to(const Tensor& a_in, const Shape& shape) override {
    const Tensor a = dense(a_in);
    Tensor out = Tensor::empty(shape, a.dtype(), a.device());
    Shape aligned(a.shape().size() - shape.size(), 1);  // leading dims broadcast from nothing
    aligned.insert(aligned.end(), shape.begin(), shape.end());
    ReducePlan plan;
    AG_CHECK(plan_sum_to(a.shape(), aligned, &plan), "cuda: sum_to from ", to_string(a.shape()),
             " to ", to_string(shape), " alternates kept and reduced dims too often");
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      cuda::sum_to<T>(a.data<T>(), out.data<T>(), plan);
    });
    return out;
  }

  Tensor matmul(const Tensor& a_in, const Tensor& b_in, bool ta, bool tb,
                const Tensor* bias_in) override {
    // Note [Strided operands]: a transposed operand is read in place through the GEMM's flag.
    const Tensor a = gemm_operand(a_in, &ta), b = gemm_operand(b_in, &tb);
    const Tensor bias_dense = bias_in ? dense(*bias_in) : Tensor();
    const Tensor* bias = bias_in ? &bias_dense : nullptr;
    const int64_t r = a.dim() - 2, c = a.dim() - 1;
    const int64_t ar = a.shape()[r], ac = a.shape()[c];
    const int64_t br = b.shape()[b.dim() - 2], bc = b.shape()[b.dim() - 1];
    Shape shape = a.shape();
    shape[r] = ta ? ac : ar;
    shape[c] = tb ? br : bc;
    Tensor out = Tensor::empty(shape, a.dtype(), a.device());
    GemmArgs g;
    g.m = shape[r];
    g.n = shape[c];
    g.k = ta ? ar : ac;
    g.trans_a = ta;
    g.trans_b = tb;
    g.lda = ac;
    g.ldb = bc;
    g.ldc = g.n;
    g.stride_a = ar * ac;
    g.stride_b = br * bc;
    g.stride_c = g.m * g.n;
    g.batch = a.dim() == 3 ? a.shape()[0] : 1;
    // An operand of known zeros (Note [Known zeros]): the product is written, not multiplied,
    // and is known to hold only +0 and NaN when nothing is added to it.
    using Zeros = Tensor::Zeros;
    const Zeros za = a.known_zeros(), zb = b.known_zeros();
    const bool zero_operand =
        (za != Zeros::kUnknown || zb != Zeros::kUnknown) && current_options().skip_zero_products;
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      const T* bias_data = bias != nullptr ? bias->data<T>() : nullptr;
      if (zero_operand) {
        ++counters().products_of_zeros;
        ++counters().products_of_known_zeros;
        zero_product<T>(g, za == Zeros::kAll, zb == Zeros::kAll, a.data<T>(), b.data<T>(),
                        bias_data, out.data<T>());
      } else {
        gemm<T>(g, a.data<T>(), b.data<T>(), bias_data, out.data<T>());
      }
    });
    if (zero_operand && bias == nullptr) out.mark_zeros(Zeros::kAllButNaN);
    return out;
  }

  Tensor log_softmax(const Tensor& a_in, int64_t dim) override {
    const Tensor a = dense(a_in);
    Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= a.shape()[d];
    for (int64_t d = dim + 1; d < a.dim(); ++d) inner *= a.shape()[d];
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      cuda::log_softmax<T>(a.data<T>(), out.data<T>(), outer, a.shape()[dim], inner);
    });
    return out;
  }

  Tensor gather_rows(const Tensor& a_in, const std::vector<int64_t>& targets) override {
    const Tensor a = dense(a_in);
    Tensor out = Tensor::empty({a.shape()[0]}, a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      cuda::gather_rows<T>(a.data<T>(), out.data<T>(), a.shape()[0], a.shape()[1], targets);
    });
    return out;
  }

  Tensor nll_grad_pattern(const Shape& shape, const std::vector<int64_t>& targets, double scale,
                          DType dtype, Device device) override {
    Tensor out = Tensor::empty(shape, dtype, device);
    dispatch_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      nll_pattern<T>(out.data<T>(), shape[0], shape[1], targets, static_cast<T>(-scale));
    });
    return out;
  }

  Tensor dropout_mask(const Shape& shape, double keep_prob, uint64_t seed, DType dtype,
                      Device device) override {
    Tensor out = Tensor::empty(shape, dtype, device);
    dispatch_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      cuda::dropout_mask<T>(out.data<T>(), out.numel(), keep_prob, seed);
    });
    return out;
  }

 private:
  static void binary_into(BinaryKind kind, const Tensor& a, const Tensor& b, const Tensor& out) {
    const Shape& shape = out.shape();
    const bool same =
        a.shape() == shape && b.shape() == shape && a.is_contiguous() && b.is_contiguous();
    const Layout layout =
        same ? Layout{}
             : layout_for(shape, {ops::broadcast_strides(a.shape(), a.strides(), shape),
                                  ops::broadcast_strides(b.shape(), b.strides(), shape)});
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      cuda::binary<T>(kind, a.data<T>(), b.data<T>(), out.data<T>(), out.numel(),
                      same ? nullptr : &layout);
    });
  }

  void strided_copy(const Tensor& src, const std::vector<int64_t>& src_strides,
                    const Tensor& dst) override {
    const Layout layout = layout_for(dst.shape(), {src_strides});
    dispatch_dtype(dst.dtype(), [&](auto z) {
      using T = decltype(z);
      cuda::strided_copy<T>(src.data<T>(), dst.data<T>(), dst.numel(), layout);
    });
  }
};

// Registration at static-initialization time (the engine's DeviceTables are constant-initialized,
// engine/device_table.h, so the order of static initializers does not matter).
[[maybe_unused]] const bool kRegistered = [] {
  static CudaBackend backend;
  register_allocator(DeviceType::kCUDA, &caching_allocator());
  ops::register_backend(DeviceType::kCUDA, &backend);
  return true;
}();

}  // namespace
}  // namespace ag::cuda
