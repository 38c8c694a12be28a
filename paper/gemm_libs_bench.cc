// `bazel run -c opt //paper:gemm_libs_bench -- [LIBRARY.so ...]`: the hessian's three product
// shapes (paper/workloads/hessian.h: forward h @ W^T, input gradient g @ W, weight gradient
// g^T @ h with inner dimension 1000; float32, batch 1000, width 256) with Eigen, as the kernels run
// them (ops/cpu/kernels.cc), against the Fortran-interface sgemm_ of each BLAS library given (e.g.
// Debian's OpenBLAS or BLIS, or the MKL inside PyTorch's libtorch_cpu.so), whole and cut into row
// blocks as the kernels' parallel split cuts them. One thread: set OPENBLAS_NUM_THREADS=1,
// BLIS_NUM_THREADS=1, MKL_NUM_THREADS=1. Prints the median thread CPU time of each (interleaved
// repetitions, so that a busy machine's slow spells land on all alike) and checks every result
// against Eigen's.
#include <dlfcn.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

namespace {

using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*,
                       const float*, const int*, const float*, const int*, const float*, float*,
                       const int*);

double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Rows [r0, r0 + rows) of the row-major C = op(A) op(B).
using RowsProduct =
    std::function<void(const Mat& a, const Mat& b, bool ta, bool tb, Mat& c, int r0, int rows)>;

void eigen_rows(const Mat& a, const Mat& b, bool ta, bool tb, Mat& c, int r0, int rows) {
  auto out = c.middleRows(r0, rows);
  if (!ta && !tb) out.noalias() = a.middleRows(r0, rows) * b;
  if (!ta && tb) out.noalias() = a.middleRows(r0, rows) * b.transpose();
  if (ta && !tb) out.noalias() = a.transpose().middleRows(r0, rows) * b;
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
RowsProduct blas_rows(Sgemm sgemm) {
  return [sgemm](const Mat& a, const Mat& b, bool ta, bool tb, Mat& c, int r0, int rows) {
    const int n = static_cast<int>(c.cols()), k = static_cast<int>(ta ? a.rows() : a.cols());
    const int lda = static_cast<int>(a.cols()), ldb = static_cast<int>(b.cols()), ldc = n;
    const float one = 1, zero = 0;
    const float* pa = ta ? a.data() + r0 : a.data() + static_cast<long>(r0) * lda;
    sgemm(tb ? "T" : "N", ta ? "T" : "N", &n, &rows, &k, &one, b.data(), &ldb, pa, &lda, &zero,
          c.data() + static_cast<long>(r0) * ldc, &ldc);
  };
}

struct Shape {
  const char* name;
  const Mat& a;
  const Mat& b;
  bool ta, tb;
  Mat& c;
};

}  // namespace

int main(int argc, char** argv) {
  const Mat h = Mat::Random(1000, 256), g = Mat::Random(1000, 256), w = Mat::Random(256, 256);
  Mat out1(1000, 256), out2(1000, 256), out3(256, 256), want(1000, 256);
  const std::vector<Shape> shapes = {{"forward h W^T", h, w, false, true, out1},
                                     {"input grad g W", g, w, false, false, out2},
                                     {"weight grad g^T h", g, h, true, false, out3}};
  std::vector<std::pair<std::string, RowsProduct>> impls = {{"Eigen", &eigen_rows}};
  for (int i = 1; i < argc; ++i) {
    void* lib = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
    Sgemm sgemm = lib ? reinterpret_cast<Sgemm>(dlsym(lib, "sgemm_")) : nullptr;
    if (!sgemm) {
      std::fprintf(stderr, "gemm_libs_bench: no sgemm_ in %s: %s\n", argv[i], dlerror());
      return 2;
    }
    const std::string path = argv[i];
    impls.emplace_back(path.substr(path.rfind('/') + 1), blas_rows(sgemm));
  }
  struct Variant {
    std::string label;
    std::function<void()> run;
  };
  std::vector<Variant> variants;
  for (const auto& [name, rows_product] : impls) {
    for (const Shape& s : shapes) {
      for (int blocks : {1, 2, 8}) {
        const int m = static_cast<int>(s.c.rows()), per = (m + blocks - 1) / blocks;
        const RowsProduct& f = rows_product;
        variants.push_back(
            {name + ", " + s.name + ", " + std::to_string(blocks) + " block(s)", [&s, &f, m, per] {
               for (int r0 = 0; r0 < m; r0 += per) {
                 f(s.a, s.b, s.ta, s.tb, s.c, r0, std::min(per, m - r0));
               }
             }});
      }
    }
  }
  // Every variant's result against Eigen's whole product.
  for (size_t v = 0; v < variants.size(); ++v) {
    const Shape& s = shapes[v / 3 % 3];
    variants[v].run();
    const Mat result = s.c;
    eigen_rows(s.a, s.b, s.ta, s.tb, s.c, 0, static_cast<int>(s.c.rows()));
    const float err = (result - s.c).cwiseAbs().maxCoeff() / (1 + s.c.cwiseAbs().maxCoeff());
    if (!(err < 1e-5f)) {
      std::fprintf(stderr, "gemm_libs_bench: %s differs from Eigen by %g\n",
                   variants[v].label.c_str(), err);
      return 1;
    }
  }
  const int reps = 15, calls = 3;
  std::vector<std::vector<double>> us(variants.size());
  for (int r = 0; r < reps; ++r) {
    for (size_t v = 0; v < variants.size(); ++v) {
      const double start = thread_seconds();
      for (int i = 0; i < calls; ++i) variants[v].run();
      us[v].push_back((thread_seconds() - start) / calls * 1e6);
    }
  }
  std::printf("| product (one thread, thread CPU time) | median |\n| --- | ---: |\n");
  for (size_t v = 0; v < variants.size(); ++v) {
    std::sort(us[v].begin(), us[v].end());
    std::printf("| %s | %.0f us |\n", variants[v].label.c_str(), us[v][us[v].size() / 2]);
  }
  return 0;
}
