#include "cuda/cublas_matmul.h"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/check.h"
#include "cuda/cublaslt_matmul.h"
#include "cuda/cuda.h"
#include "cuda/dynamic_library.h"
#include "cuda/stream.h"
#include "engine/error.h"

namespace ag::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t{4} << 20;

std::atomic<bool> g_allow_tf32{false};
std::atomic<GemmBackend> g_backend{GemmBackend::kCublas};

// The cuBLAS entry points we call, resolved with dlsym. decltype keeps the signatures exactly
// those of the header we compiled against.
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasGetProperty) get_property = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasDgemm_v2) dgemm = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm_batched = nullptr;
  decltype(&cublasDgemmStridedBatched) dgemm_batched = nullptr;
};

struct Cublas {
  bool loaded = false;
  std::string status;  // where it came from, or why it did not load
  CublasApi api;
  std::mutex mutex;  // one handle, used by one thread at a time
  cublasHandle_t handle = nullptr;
  void* workspace = nullptr;
};

void load(Cublas& c) {
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  std::vector<std::string> candidates;
  if (const char* path = std::getenv("AG_CUBLAS_PATH")) candidates.push_back(path);
  candidates.push_back(soname);
  candidates.push_back("/usr/local/cuda/lib64/" + soname);
  void* lib = nullptr;
  std::string tried, from;
  for (const std::string& candidate : candidates) {
    // libcublas finds its libcublasLt beside itself (RUNPATH $ORIGIN).
    lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      from = candidate;
      break;
    }
    tried += (tried.empty() ? "" : "; ") + std::string(dlerror());
  }
  if (lib == nullptr) {
    c.status = soname + " not found (" + tried + "); set AG_CUBLAS_PATH or LD_LIBRARY_PATH";
    return;
  }
  std::string missing;
  CublasApi& a = c.api;
  resolve(lib, "cublasCreate_v2", a.create, missing);
  resolve(lib, "cublasSetStream_v2", a.set_stream, missing);
  resolve(lib, "cublasSetWorkspace_v2", a.set_workspace, missing);
  resolve(lib, "cublasSetMathMode", a.set_math_mode, missing);
  resolve(lib, "cublasGetProperty", a.get_property, missing);
  resolve(lib, "cublasGetStatusString", a.status_string, missing);
  resolve(lib, "cublasSgemm_v2", a.sgemm, missing);
  resolve(lib, "cublasDgemm_v2", a.dgemm, missing);
  resolve(lib, "cublasSgemmStridedBatched", a.sgemm_batched, missing);
  resolve(lib, "cublasDgemmStridedBatched", a.dgemm_batched, missing);
  if (!missing.empty()) {
    c.status = from + " lacks " + missing;
    return;
  }
  int major = 0, minor = 0, patch = 0;
  a.get_property(MAJOR_VERSION, &major);
  a.get_property(MINOR_VERSION, &minor);
  a.get_property(PATCH_LEVEL, &patch);
  c.status = "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." +
             std::to_string(patch) + " (" + from + ")";
  c.loaded = true;
  // cuBLASLt sits beside libcublas (which loads it itself); float products go through it.
  const size_t slash = from.rfind('/');
  const std::string lt = lt::load(slash == std::string::npos ? "" : from.substr(0, slash));
  c.status += lt.empty() ? ", with cuBLASLt" : ", no cuBLASLt: " + lt;
}

Cublas& cublas() {
  static Cublas* c = [] {
    auto* instance = new Cublas();  // never destroyed: the handle may be in use at exit
    load(*instance);
    return instance;
  }();
  return *c;
}

void check_status(const Cublas& c, cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) fail("cuBLAS error in ", what, ": ", c.api.status_string(s));
}

bool fits_int(const GemmArgs& g) {
  for (int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch}) {
    if (v > INT_MAX) return false;
  }
  return true;
}

// cuBLAS is column-major; a row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T,
// so B goes first and m, n swap. A row-major matrix read column-major is its transpose, so the
// transpose flags carry over unchanged.
template <typename T>
void cublas_gemm(Cublas& c, const GemmArgs& g, const T* a, const T* b, T* out) {
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.handle == nullptr) {
    check_status(c, c.api.create(&c.handle), "cublasCreate");
    check_status(c, c.api.set_stream(c.handle, stream()), "cublasSetStream");
    // A workspace of our own rather than one cuBLAS allocates when it likes: a stream being
    // captured into a graph must not see an allocation (graph.h).
    check(cudaMalloc(&c.workspace, kWorkspaceBytes), "cuBLAS workspace");
    check_status(c, c.api.set_workspace(c.handle, c.workspace, kWorkspaceBytes),
                 "cublasSetWorkspace");
  }
  // Plain FP32 unless TF32 was asked for (cuBLAS's default math mode computes in FP32).
  check_status(c,
               c.api.set_math_mode(c.handle,
                                   allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
               "cublasSetMathMode");
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(g.n), n = static_cast<int>(g.m), k = static_cast<int>(g.k);
  const int ldb = static_cast<int>(g.ldb), lda = static_cast<int>(g.lda);
  const int ldc = static_cast<int>(g.ldc), batch = static_cast<int>(g.batch);
  const T alpha = 1, beta = g.accumulate ? 1 : 0;
  cublasStatus_t s;
  if constexpr (std::is_same_v<T, float>) {
    s = batch == 1
            ? c.api.sgemm(c.handle, op_b, op_a, m, n, k, &alpha, b, ldb, a, lda, &beta, out, ldc)
            : c.api.sgemm_batched(c.handle, op_b, op_a, m, n, k, &alpha, b, ldb, g.stride_b, a, lda,
                                  g.stride_a, &beta, out, ldc, g.stride_c, batch);
  } else {
    s = batch == 1
            ? c.api.dgemm(c.handle, op_b, op_a, m, n, k, &alpha, b, ldb, a, lda, &beta, out, ldc)
            : c.api.dgemm_batched(c.handle, op_b, op_a, m, n, k, &alpha, b, ldb, g.stride_b, a, lda,
                                  g.stride_a, &beta, out, ldc, g.stride_c, batch);
  }
  check_status(c, s, "gemm");
}

bool use_cublas(const GemmArgs& g) {
  // k == 0 (an empty sum) goes to the builtin path, which writes the zeros itself: cuBLAS
  // would reject the zero leading dimensions.
  return gemm_backend() == GemmBackend::kCublas && cublas().loaded && fits_int(g) && g.k > 0;
}

}  // namespace

void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool allow_tf32() { return g_allow_tf32; }
void set_gemm_backend(GemmBackend backend) { g_backend = backend; }
GemmBackend gemm_backend() { return g_backend; }
bool cublas_loaded() { return cublas().loaded; }
std::string cublas_status() { return cublas().status; }
int product_plans() { return lt::plans(); }

std::string gemm_description() {
  if (gemm_backend() == GemmBackend::kCublas && cublas().loaded) {
    return cublas().status + (allow_tf32() ? ", TF32 allowed" : ", FP32");
  }
  return "builtin tiled GEMM" + (gemm_backend() == GemmBackend::kBuiltin
                                     ? std::string(" (selected)")
                                     : " (cuBLAS unavailable: " + cublas().status + ")");
}

template <typename T>
void gemm(const GemmArgs& args, const T* a, const T* b, const T* bias, T* c) {
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (use_cublas(args) && lt::matmul(args, a, b, bias, c)) return;
  }
  GemmArgs g = args;
  if (bias != nullptr) {  // C = bias (broadcast over rows), then C += A B
    broadcast_rows<T>(bias, c, g.batch * g.m, g.n);
    g.accumulate = true;
  }
  if (use_cublas(g)) {
    cublas_gemm(cublas(), g, a, b, c);
  } else {
    gemm_builtin(g, a, b, c);
  }
}

template void gemm<float>(const GemmArgs&, const float*, const float*, const float*, float*);
template void gemm<double>(const GemmArgs&, const double*, const double*, const double*, double*);

}  // namespace ag::cuda
