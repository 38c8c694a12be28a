// The CPU backend: tensors in, tensors out. The vectorized kernels come from the table of the
// instruction set picked at run time (ops/cpu/kernels.h, Note [Kernel instruction sets] in
// ops/cpu/isa.h); this file allocates outputs, dispatches on dtype, splits large work over threads
// (ops/cpu/parallel.h) and runs the strided and broadcasting loops.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/counters.h"
#include "engine/error.h"
#include "engine/memory/allocator.h"
#include "engine/options.h"
#include "ops/backend.h"
#include "ops/counter_rng.h"
#include "ops/cpu/isa.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/zero_operand.h"
#include "ops/output_layout.h"
#include "ops/scalar_rules.h"
#include "ops/strided_loop.h"

namespace ag::ops {
namespace {

// Chunks per thread when work is split: enough that a thread that is descheduled (a busy
// machine) holds back only a small part of the work while the others take the rest, few enough
// that the per-chunk costs (a task, Eigen's packing) stay small. See Note [Parallel runtime].
constexpr int64_t kChunksPerThread = 4;

// for_blocks' large case: chunks of a multiple of 16 elements (so that aligned arrays stay
// aligned) on parallel_for; elementwise work is memory-bound, but two cores still help. Out of
// line, so that small ops do not set up its std::function.
template <typename Fn>
[[gnu::noinline]] void for_blocks_in_parallel(int64_t n, const Fn& fn) {
  const int64_t chunks = parallel_threads() * kChunksPerThread;
  const int64_t grain = (n + chunks - 1) / chunks / 16 * 16 + 16;
  parallel_for(n, grain, [&](int64_t begin, int64_t end) { fn(begin, end - begin); });
}
// Calls fn(begin, length) over [0, n): once when n is small, else in parallel chunks.
template <typename Fn>
void for_blocks(int64_t n, const Fn& fn) {
  constexpr int64_t kParallelElements = int64_t{1} << 16;
  if (n < kParallelElements || parallel_threads() == 1) {
    fn(int64_t{0}, n);
  } else {
    for_blocks_in_parallel(n, fn);
  }
}

class CpuBackend final : public Backend {
 public:
  // `kernels` may be null (an instruction set this build lacks): has_kernels() says so.
  explicit CpuBackend(const CpuKernels* kernels) : kernels_(kernels) {}
  bool has_kernels() const { return kernels_ != nullptr; }

  Tensor binary(BinaryKind kind, const Tensor& a, const Tensor& b, const Shape& shape) override {
    Tensor out = Tensor::empty(shape, a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) { binary_impl<decltype(z)>(kind, a, b, out); });
    return out;
  }
  void binary_inplace(BinaryKind kind, const Tensor& a, const Tensor& b) override {
    dispatch_dtype(a.dtype(), [&](auto z) { binary_impl<decltype(z)>(kind, a, b, a); });
  }
  Tensor unary(UnaryKind kind, const Tensor& a_in, double scalar) override {
    const Tensor a = dense(a_in);
    Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      const T* x = a.data<T>();
      T* y = out.data<T>();
      auto unary = kernels<T>().unary;
      for_blocks(out.numel(),
                 [&](int64_t begin, int64_t n) { unary(kind, x + begin, y + begin, n, scalar); });
    });
    return out;
  }
  Tensor scaled_product(const Tensor& a_in, const Tensor& b_in, const Tensor& c_in,
                        double scale) override {
    const Tensor a = dense(a_in), b = dense(b_in), c = dense(c_in);
    Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      const T *pa = a.data<T>(), *pb = b.data<T>(), *pc = c.data<T>();
      T* po = out.data<T>();
      auto kernel = kernels<T>().scaled_product;
      const T s = static_cast<T>(scale);
      for_blocks(out.numel(), [=](int64_t begin, int64_t n) {
        kernel(pa + begin, pb + begin, pc + begin, s, po + begin, n);
      });
    });
    return out;
  }
  void sum_into_binary(const Tensor& sum, BinaryKind kind, const Tensor& a_in,
                       const Tensor& b_in) override {
    const Tensor a = dense(a_in), b = dense(b_in);
    dispatch_dtype(sum.dtype(), [&](auto z) {
      using T = decltype(z);
      const T *pa = a.data<T>(), *pb = b.data<T>();
      auto binary = kernels<T>().binary;
      sum_in_blocks<T>(sum, [=](int64_t begin, int64_t n, T* values) {
        binary(kind, pa + begin, pb + begin, values, n);
      });
    });
  }
  void sum_into_scaled_product(const Tensor& sum, const Tensor& a_in, const Tensor& b_in,
                               const Tensor& c_in, double scale) override {
    const Tensor a = dense(a_in), b = dense(b_in), c = dense(c_in);
    dispatch_dtype(sum.dtype(), [&](auto z) {
      using T = decltype(z);
      const T *pa = a.data<T>(), *pb = b.data<T>(), *pc = c.data<T>();
      auto kernel = kernels<T>().scaled_product;
      const T s = static_cast<T>(scale);
      sum_in_blocks<T>(sum, [=](int64_t begin, int64_t n, T* values) {
        kernel(pa + begin, pb + begin, pc + begin, s, values, n);
      });
    });
  }
  Tensor fill(const Shape& shape, double value, DType dtype, Device device) override {
    Tensor out = Tensor::empty(shape, dtype, device);
    dispatch_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      T* po = out.data<T>();
      auto fill = kernels<T>().fill;
      for_blocks(out.numel(),
                 [&](int64_t begin, int64_t n) { fill(po + begin, n, static_cast<T>(value)); });
    });
    return out;
  }
  void copy(const Tensor& dst, const Tensor& src) override {
    if (!dst.is_contiguous()) return copy_in_tensor_iterator_order(dst, src);
    if (src.numel() == dst.numel() && src.is_contiguous()) {
      std::memcpy(dst.raw_data(), src.raw_data(), dst.nbytes());
      return;
    }
    strided_copy(src, broadcast_strides(src.shape(), src.strides(), dst.shape()), dst);
  }
  void scatter(const Tensor& dst, const Layout& at, const Tensor& src_in,
               bool accumulate) override {
    const Tensor src = dense(src_in);
    dispatch_dtype(dst.dtype(), [&](auto z) {
      using T = decltype(z);
      T* pd = dst.data<T>() + at.offset;
      const T* ps = src.data<T>();
      std::array<std::vector<int64_t>, 1> strides = {
          std::vector<int64_t>(at.strides.begin(), at.strides.end())};
      for_each_run<1>(at.sizes, strides, [&](auto off, int64_t n, auto inc) {
        T* p = pd + off[0];
        for (int64_t k = 0; k < n; ++k, ++ps)
          p[k * inc[0]] = accumulate ? p[k * inc[0]] + *ps : *ps;
      });
    });
  }
  Tensor sum_all(const Tensor& a_in) override {
    const Tensor a = dense(a_in);
    Tensor out = Tensor::empty({}, a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      out.data<T>()[0] = kernels<T>().sum(a.data<T>(), a.numel());
    });
    return out;
  }
  Tensor sum_to(const Tensor& a_in, const Shape& shape) override {
    const Tensor a = dense(a_in);
    Tensor out = Tensor::empty(shape, a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) { sum_to_impl<decltype(z)>(a, out); });
    return out;
  }
  // Note [The order a write visits its target in]
  // A write into a target that reaches one storage element at several indices (an overlapping
  // as_strided or unfold: PyTorch's overlap checks cannot tell, Note [Overlapping writes] in
  // ops/inplace.cc) leaves there the value of whichever index is visited last. PyTorch's
  // TensorIterator does not visit in row-major order: it sorts the dims by the operands' strides
  // (reorder_dimensions: the output's first, then each input's, a broadcast dim of stride 0 telling
  // nothing; for equal strides the dim of smaller size goes inside), so copy_ into
  // `x.as_strided([2, 3], [1, 1])` visits down the columns. The CPU copy into a non-contiguous
  // target visits its dims in that order, so such a copy leaves what PyTorch's leaves; for a target
  // without overlap the order changes nothing. (An in-place add_ or mul_ into such a target applies
  // each index's operand in turn to the shared element, in either order: only the rounding of the
  // sum or product can differ.)
  // The order is rule 2's of Note [Output layout of elementwise ops] (ops/output_layout.h).
  void copy_in_tensor_iterator_order(const Tensor& dst, const Tensor& src) {
    const Shape dst_strides = dst.strides();
    const std::vector<int64_t> src_strides =
        broadcast_strides(src.shape(), src.strides(), dst.shape());
    const std::vector<size_t> inner_first = iteration_order(
        dst.shape(),
        {2, [&](size_t k, size_t d) { return k == 0 ? dst_strides[d] : src_strides[d]; }});
    Shape shape;
    std::array<std::vector<int64_t>, 2> visited;
    for (auto d = inner_first.rbegin(); d != inner_first.rend(); ++d) {  // outermost first
      shape.push_back(dst.shape()[*d]);
      visited[0].push_back(dst_strides[*d]);
      visited[1].push_back(src_strides[*d]);
    }
    dispatch_dtype(dst.dtype(), [&](auto z) {
      using T = decltype(z);
      T* pd = dst.data<T>();
      const T* ps = src.data<T>();
      for_each_run<2>(shape, visited, [&](auto off, int64_t n, auto inc) {
        for (int64_t i = 0; i < n; ++i) pd[off[0] + i * inc[0]] = ps[off[1] + i * inc[1]];
      });
    });
  }
  void strided_copy(const Tensor& src, const std::vector<int64_t>& src_strides,
                    const Tensor& dst) override {
    dispatch_dtype(dst.dtype(), [&](auto z) {
      using T = decltype(z);
      const T* ps = src.data<T>();
      T* pd = dst.data<T>();
      std::array<std::vector<int64_t>, 2> strides = {src_strides, contiguous_strides(dst.shape())};
      for_each_run<2>(dst.shape(), strides, [&](auto off, int64_t n, auto inc) {
        for (int64_t i = 0; i < n; ++i) pd[off[1] + i] = ps[off[0] + i * inc[0]];
      });
    });
  }
  Tensor matmul(const Tensor& a_in, const Tensor& b_in, bool ta, bool tb,
                const Tensor* bias_in) override {
    // Note [Strided operands]: a transposed operand is read in place through the GEMM's flag.
    const Tensor a = gemm_operand(a_in, &ta), b = gemm_operand(b_in, &tb);
    const Tensor bias_dense = bias_in ? dense(*bias_in) : Tensor();
    const Tensor* bias = bias_in ? &bias_dense : nullptr;
    const int64_t r = a.dim() - 2, c = a.dim() - 1;
    Shape shape = a.shape();
    shape[r] = ta ? a.shape()[c] : a.shape()[r];
    shape[c] = tb ? b.shape()[b.dim() - 2] : b.shape()[b.dim() - 1];
    Tensor out = Tensor::empty(shape, a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) { matmul_impl<decltype(z)>(a, b, ta, tb, bias, out); });
    return out;
  }
  Tensor log_softmax(const Tensor& a_in, int64_t dim) override {
    const Tensor a = dense(a_in);
    Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) { log_softmax_impl<decltype(z)>(a, dim, out); });
    return out;
  }
  Tensor gather_rows(const Tensor& a_in, const std::vector<int64_t>& targets) override {
    const Tensor a = dense(a_in);
    const int64_t rows = a.shape()[0], cols = a.shape()[1];
    Tensor out = Tensor::empty({rows}, a.dtype(), a.device());
    dispatch_dtype(a.dtype(), [&](auto z) {
      using T = decltype(z);
      for (int64_t r = 0; r < rows; ++r) out.data<T>()[r] = a.data<T>()[r * cols + targets[r]];
    });
    return out;
  }
  Tensor nll_grad_pattern(const Shape& shape, const std::vector<int64_t>& targets, double scale,
                          DType dtype, Device device) override {
    Tensor out = fill(shape, 0.0, dtype, device);
    dispatch_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      for (size_t row = 0; row < targets.size(); ++row) {
        out.data<T>()[row * shape[1] + targets[row]] = static_cast<T>(-scale);
      }
    });
    return out;
  }
  Tensor dropout_mask(const Shape& shape, double keep_prob, uint64_t seed, DType dtype,
                      Device device) override {
    Tensor out = Tensor::empty(shape, dtype, device);
    dispatch_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      T* p = out.data<T>();
      const T keep = static_cast<T>(1.0 / keep_prob);
      const uint64_t threshold = keep_threshold(keep_prob);
      // Each element depends on (seed, index) alone, so any split over threads draws one mask.
      for_blocks(out.numel(), [&](int64_t begin, int64_t n) {
        kernels<T>().dropout_mask(p + begin, begin, n, seed, threshold, keep);
      });
    });
    return out;
  }

 private:
  template <typename T>
  const CpuKernelsFor<T>& kernels() const {
    if constexpr (std::is_same_v<T, float>) {
      return kernels_->f32;
    } else {
      return kernels_->f64;
    }
  }

  // a and b broadcast to out's shape. When both have as many elements as out, neither was
  // expanded (a broadcast that keeps the element count only adds or drops size-1 dims), so all
  // three share one flat layout: the common case, told apart without comparing shapes, and run
  // as one vectorized pass (split over threads when large).
  template <typename T>
  void binary_impl(BinaryKind kind, const Tensor& a, const Tensor& b, const Tensor& out) {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    // Note [Strided operands]: the flat passes need contiguous operands; the broadcasting loop
    // reads any strides.
    const bool flat = a.is_contiguous() && b.is_contiguous() && out.is_contiguous();
    if (flat && a.numel() == out.numel() && b.numel() == out.numel()) {
      auto binary = kernels<T>().binary;
      for_blocks(out.numel(), [=](int64_t begin, int64_t n) {
        binary(kind, pa + begin, pb + begin, po + begin, n);
      });
    } else if (flat && a.numel() == out.numel() && b.numel() == 1) {
      kernels<T>().binary_scalar(kind, pa, pb[0], po, out.numel());
    } else {
      binary_broadcast<T>(kind, a, b, out);
    }
  }

  // Kept apart from binary_impl, whose stack frame and set-up every small op would otherwise pay
  // for.
  template <typename T>
  [[gnu::noinline]] void binary_broadcast(BinaryKind kind, const Tensor& a, const Tensor& b,
                                          const Tensor& out) {
    const Shape& shape = out.shape();
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    std::array<std::vector<int64_t>, 3> strides = {broadcast_strides(a.shape(), a.strides(), shape),
                                                   broadcast_strides(b.shape(), b.strides(), shape),
                                                   out.strides()};
    for_each_run<3>(shape, strides, [&](auto off, int64_t n, auto inc) {
      for (int64_t i = 0; i < n; ++i) {
        po[off[2] + i * inc[2]] =
            apply_binary(kind, pa[off[0] + i * inc[0]], pb[off[1] + i * inc[1]]);
      }
    });
  }

  // sum += the values that values(begin, n, out) writes for elements [begin, begin + n), in
  // blocks that stay in the L1 cache: each block is written to the stack, then added into `sum`
  // by the add kernel, exactly as binary_inplace adds a whole tensor (the same bits), in one pass
  // over memory (Note [Sums fused into formulas], engine/engine.cc). Blocks start at multiples of
  // kSumBlock within for_blocks' chunks, so aligned arrays stay aligned.
  template <typename T, typename Values>
  void sum_in_blocks(const Tensor& sum, const Values& values) {
    constexpr int64_t kSumBlock = 1024;
    T* ps = sum.data<T>();
    auto binary = kernels<T>().binary;
    for_blocks(sum.numel(), [&](int64_t begin, int64_t n) {
      alignas(64) T block[kSumBlock];
      for (int64_t done = 0; done < n; done += kSumBlock) {
        const int64_t len = std::min(kSumBlock, n - done);
        values(begin + done, len, block);
        binary(BinaryKind::kAdd, ps + begin + done, block, ps + begin + done, len);
      }
    });
  }

  template <typename T>
  void sum_to_impl(const Tensor& a, const Tensor& out) {
    const Shape& in_shape = a.shape();
    const T* pa = a.data<T>();
    T* po = out.data<T>();
    // [N, C] -> [C] or [1, C] (bias gradients) is the hot case: a column sum. The check is on
    // the shape, not the element count: [N, N] -> [N, 1] is a row sum.
    const Shape& to = out.shape();
    if (in_shape.size() == 2 && in_shape[1] > 1 &&
        (to == Shape{in_shape[1]} || to == Shape{1, in_shape[1]})) {
      kernels<T>().column_sum(pa, in_shape[0], in_shape[1], po);
      return;
    }
    std::memset(static_cast<void*>(po), 0, out.nbytes());
    std::array<std::vector<int64_t>, 2> strides = {contiguous_strides(in_shape),
                                                   broadcast_strides(out.shape(), in_shape)};
    for_each_run<2>(in_shape, strides, [&](auto off, int64_t n, auto inc) {
      if (inc[1] == 0) {
        T acc = 0;
        for (int64_t i = 0; i < n; ++i) acc += pa[off[0] + i];
        po[off[1]] += acc;
      } else {
        for (int64_t i = 0; i < n; ++i) po[off[1] + i] += pa[off[0] + i];
      }
    });
  }

  // Large products are split into blocks of rows of whole matrices (kChunksPerThread per thread
  // in all), run by parallel_for; small ones stay on the calling thread, where the split would
  // cost more than it saves.
  template <typename T>
  void matmul_impl(const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor* bias,
                   const Tensor& out) {
    const bool batched = a.dim() == 3;
    const int64_t batch = batched ? a.shape()[0] : 1;
    const MatmulShape s = {a.shape()[a.dim() - 2],
                           a.shape()[a.dim() - 1],
                           b.shape()[b.dim() - 2],
                           b.shape()[b.dim() - 1],
                           ta,
                           tb};
    const int64_t m = s.m(), n = s.n();
    const T* pbias = bias ? bias->data<T>() : nullptr;
    auto matmul_rows = kernels<T>().matmul_rows;
    auto matrix = [&](int64_t i, int64_t r0, int64_t rows) {
      matmul_rows(a.data<T>() + i * s.a_rows * s.a_cols, b.data<T>() + i * s.b_rows * s.b_cols,
                  pbias, out.data<T>() + i * m * n, s, r0, rows);
    };
    constexpr int64_t kParallelWork = int64_t{1} << 20;  // multiply-adds
    constexpr int64_t kMinRows = 16;
    const int64_t work = batch * m * n * s.k();
    if (work >= kParallelWork && current_options().skip_zero_products && product_is_zero<T>(a, b)) {
      write_zero_product(pbias, out, n);
      return;
    }
    // One matrix goes through the shared packing below on any number of threads, also one
    // (parallel_for then runs its chunks as one call): its kernel writes C rather than zeroing it
    // first (Note [Products written, not accumulated]).
    if (work < kParallelWork || (batch > 1 && parallel_threads() == 1)) {
      for (int64_t i = 0; i < batch; ++i) matrix(i, 0, m);
      return;
    }
    const int64_t chunks = parallel_threads() * kChunksPerThread;
    const int64_t blocks =
        std::clamp<int64_t>((chunks + batch - 1) / batch, 1, std::max<int64_t>(1, m / kMinRows));
    if (batch == 1) {
      matmul_shared_packing<T>(a.data<T>(), b.data<T>(), pbias, out.data<T>(), s, blocks);
      return;
    }
    const int64_t rows = (m + blocks - 1) / blocks;
    parallel_for(batch * blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t r0 = t % blocks * rows;
        if (r0 < m) matrix(t / blocks, r0, std::min(rows, m - r0));
      }
    });
  }

  // op(A) op(B) with op(B) packed once and shared by about `chunks` chunks of C's rows (Note
  // [Shared packing], ops/cpu/kernels.cc).
  template <typename T>
  void matmul_shared_packing(const T* a, const T* b, const T* bias, T* out, const MatmulShape& s,
                             int64_t chunks) {
    const CpuKernelsFor<T>& k = kernels<T>();
    const MatmulBlocking blocking = k.matmul_blocking(s);
    const int64_t m = s.m(), panel = blocking.panel_rows;
    const int64_t rows = ((m + chunks - 1) / chunks + panel - 1) / panel * panel;
    // Eigen's kernel reads the packing with aligned loads; scratch blocks are aligned to 64 bytes
    // or more.
    const ScratchBlock<T> packed = scratch_block<T>(blocking.packed_size);
    T* p = packed.get();
    parallel_for(blocking.pieces, 1, [&](int64_t begin, int64_t end) {
      for (int64_t piece = begin; piece < end; ++piece) k.matmul_pack_b(b, s, blocking, piece, p);
    });
    parallel_for(m, rows, [&](int64_t r0, int64_t end) {
      k.matmul_rows_packed(a, p, bias, out, s, blocking, r0, end - r0);
    });
  }

  // Whether op(A) op(B) is exactly +0 (Note [Products with a zero operand]): one operand all +0
  // or -0, both free of Inf and NaN. A marked operand (Note [Known zeros]) needs no scan for its
  // zeros: one of all +0 is not read at all, one of +0 or NaN only for NaN.
  template <typename T>
  static bool product_is_zero(const Tensor& a, const Tensor& b) {
    using Zeros = Tensor::Zeros;
    const Zeros za = a.known_zeros(), zb = b.known_zeros();
    if (za == Zeros::kUnknown && zb == Zeros::kUnknown) {
      return ops::product_is_zero(a.data<T>(), a.numel(), b.data<T>(), b.numel());
    }
    auto finite = [](const Tensor& t, Zeros z) {
      return z == Zeros::kAll || all_finite(t.data<T>(), t.numel());
    };
    if (!finite(a, za) || !finite(b, zb)) return false;
    ++counters().products_of_known_zeros;
    return true;
  }

  // A product that is exactly +0 (Note [Products with a zero operand]): out's rows are the bias
  // plus +0 (a -0 in the bias becomes +0, as in the GEMM), or zeros.
  template <typename T>
  void write_zero_product(const T* bias, const Tensor& out, int64_t n) {
    ++counters().products_of_zeros;
    T* po = out.data<T>();
    const int64_t rows = out.numel() / n;
    if (!bias) {
      kernels<T>().fill(po, out.numel(), T(0));
      return out.mark_zeros(Tensor::Zeros::kAll);
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n; ++j) po[r * n + j] = bias[j] + T(0);
    }
  }

  template <typename T>
  void log_softmax_impl(const Tensor& a, int64_t dim, const Tensor& out) {
    const Shape& s = a.shape();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= s[d];
    for (size_t d = dim + 1; d < s.size(); ++d) inner *= s[d];
    const int64_t len = s[dim];
    const T* pa = a.data<T>();
    T* po = out.data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        const T* x = pa + o * len * inner + in;
        T* y = po + o * len * inner + in;
        T mx = x[0];
        for (int64_t k = 1; k < len; ++k) mx = std::max(mx, x[k * inner]);
        T total = 0;
        for (int64_t k = 0; k < len; ++k) total += std::exp(x[k * inner] - mx);
        // (x - max) - log(total), in PyTorch's order: exact for the largest element, where
        // x - (max + log(total)) would round at max's magnitude.
        const T log_total = std::log(total);
        for (int64_t k = 0; k < len; ++k) y[k * inner] = (x[k * inner] - mx) - log_total;
      }
    }
  }

  const CpuKernels* kernels_;
};

}  // namespace

Backend* cpu_backend_for(CpuIsa isa) {
  static CpuBackend backends[] = {CpuBackend(cpu_kernels(CpuIsa::kBaseline)),
                                  CpuBackend(cpu_kernels(CpuIsa::kAvx2)),
                                  CpuBackend(cpu_kernels(CpuIsa::kAvx512))};
  CpuBackend& backend = backends[static_cast<int>(isa)];
  return backend.has_kernels() ? &backend : nullptr;
}

Backend* cpu_backend() {
  static Backend* const backend = cpu_backend_for(selected_cpu_isa());
  return backend;
}

void fail_no_backend(const Device& device) {
  fail("no kernels for device ", to_string(device), ": this build was made without support for it");
}

void register_backend(DeviceType type, Backend* backend) { detail::backends.set(type, backend); }

}  // namespace ag::ops
