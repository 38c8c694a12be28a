#include "cuda/cublaslt_matmul.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cuda/check.h"
#include "cuda/cuda.h"
#include "cuda/dynamic_library.h"
#include "cuda/stream.h"
#include "engine/error.h"

namespace ag::cuda::lt {
namespace {

// Note [Products through cuBLASLt]
// float products go through cuBLASLt rather than cublasSgemm for one reason: the bias of
// addmm/linear rides in the GEMM's epilogue (CUBLASLT_EPILOGUE_BIAS), one kernel that writes C
// once, where cublasSgemm needs C filled with the bias first and read back (beta = 1): on the
// hessian's [10000, 256] products that fill was a quarter of the product's time. A plan per
// shape (sizes, leading dimensions, batch strides, transposes, bias, TF32, the operands'
// alignment) keeps the descriptors and cuBLASLt's heuristic choice of kernel, so a shape always
// runs the same kernel and gives the same bits. Timing the heuristic's candidates per shape, as
// PyTorch's TunableOp does, was tried and measured: on the hessian step it gained nothing over
// the heuristic's first choice (cuda/README.md), so it is not done.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // what PyTorch gives cuBLASLt on Hopper

struct LtApi {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtGetStatusString) status_string = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
};

struct Key {
  std::array<int64_t, 11> sizes;  // m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c, batch,
                                  // the operands' common alignment in bytes
  unsigned flags;                 // trans_a, trans_b, bias, accumulate, tf32
  bool operator==(const Key& o) const { return sizes == o.sizes && flags == o.flags; }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = k.flags;
    for (int64_t v : k.sizes) h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

struct Plan {
  bool ok = false;  // false: cuBLASLt has no kernel for it
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // in cuBLAS's operand order
  cublasLtMatmulAlgo_t algo{};
};

struct State {
  std::once_flag once;
  std::string status = "not loaded";
  bool loaded = false;
  LtApi api;
  std::mutex mutex;  // guards everything below
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::unordered_map<Key, Plan, KeyHash> plans;
};

State& state() {
  static State* s = new State();  // never destroyed: plans may be in use at exit
  return *s;
}

void do_load(State& s, const std::string& dir) {
  const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dir.empty() ? nullptr : dlopen((dir + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    s.status = soname + " not found: " + dlerror();
    return;
  }
  std::string missing;
  LtApi& a = s.api;
  resolve(lib, "cublasLtCreate", a.create, missing);
  resolve(lib, "cublasLtGetStatusString", a.status_string, missing);
  resolve(lib, "cublasLtMatmulDescCreate", a.desc_create, missing);
  resolve(lib, "cublasLtMatmulDescSetAttribute", a.desc_set, missing);
  resolve(lib, "cublasLtMatrixLayoutCreate", a.layout_create, missing);
  resolve(lib, "cublasLtMatrixLayoutSetAttribute", a.layout_set, missing);
  resolve(lib, "cublasLtMatmulPreferenceCreate", a.pref_create, missing);
  resolve(lib, "cublasLtMatmulPreferenceSetAttribute", a.pref_set, missing);
  resolve(lib, "cublasLtMatmulPreferenceDestroy", a.pref_destroy, missing);
  resolve(lib, "cublasLtMatmulAlgoGetHeuristic", a.heuristic, missing);
  resolve(lib, "cublasLtMatmul", a.matmul, missing);
  if (!missing.empty()) {
    s.status = soname + " lacks " + missing;
    return;
  }
  s.status = "";
  s.loaded = true;
}

void check_status(const State& s, cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    fail("cuBLASLt error in ", what, ": ", s.api.status_string(status));
  }
}

// The largest power of two (at most 256) that divides every address: cuBLASLt's kernels may
// assume as much alignment as the preference allows (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*).
int64_t common_alignment(const void* a, const void* b, const void* bias, const void* c) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                   reinterpret_cast<uintptr_t>(c) | reinterpret_cast<uintptr_t>(bias) | 256;
  return static_cast<int64_t>(bits & (~bits + 1));
}

cublasLtMatrixLayout_t make_layout(const State& s, uint64_t rows, uint64_t cols, int64_t ld,
                                   int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  check_status(s, s.api.layout_create(&layout, CUDA_R_32F, rows, cols, ld), "layout");
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    check_status(s,
                 s.api.layout_set(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
                 "layout");
    check_status(s,
                 s.api.layout_set(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                  sizeof stride),
                 "layout");
  }
  return layout;
}

// cuBLAS is column-major: row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so
// our B is cuBLAS's first operand, and m and n swap (as in cublas_matmul.cc).
void describe(State& s, Plan& p, const GemmArgs& g, bool bias, bool tf32) {
  check_status(s,
               s.api.desc_create(&p.desc, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                 CUDA_R_32F),
               "matmul descriptor");
  const cublasOperation_t op_first = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_status(s, s.api.desc_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first),
               "matmul descriptor");
  check_status(s, s.api.desc_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second),
               "matmul descriptor");
  if (bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    check_status(s,
                 s.api.desc_set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
                 "matmul descriptor");
  }
  // Stored shapes, column-major: B^T is n x k (k x n when transposed), A^T is k x m (m x k).
  p.a = make_layout(s, g.trans_b ? g.k : g.n, g.trans_b ? g.n : g.k, g.ldb, g.batch, g.stride_b);
  p.b = make_layout(s, g.trans_a ? g.m : g.k, g.trans_a ? g.k : g.m, g.lda, g.batch, g.stride_a);
  p.c = make_layout(s, g.n, g.m, g.ldc, g.batch, g.stride_c);
}

cublasStatus_t run(State& s, const Plan& p, const GemmArgs& g, const float* a, const float* b,
                   const float* bias, float* c) {
  if (bias != nullptr) {
    check_status(s, s.api.desc_set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
                 "matmul descriptor");
  }
  const float alpha = 1, beta = g.accumulate ? 1 : 0;
  return s.api.matmul(s.handle, p.desc, &alpha, b, p.a, a, p.b, &beta, c, p.c, c, p.c, &p.algo,
                      s.workspace, kWorkspaceBytes, stream());
}

// Makes the plan for a new shape: describes it and asks cuBLASLt for its kernel.
void make_plan(State& s, Plan& p, const GemmArgs& g, int64_t alignment, bool bias) {
  describe(s, p, g, bias, allow_tf32());
  cublasLtMatmulPreference_t pref = nullptr;
  check_status(s, s.api.pref_create(&pref), "preference");
  const uint64_t workspace = kWorkspaceBytes;
  const uint32_t align = static_cast<uint32_t>(alignment);
  s.api.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
  for (auto attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    s.api.pref_set(pref, attr, &align, sizeof align);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status =
      s.api.heuristic(s.handle, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  s.api.pref_destroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) return;  // p.ok stays false
  p.ok = true;
  p.algo = result.algo;
}

}  // namespace

std::string load(const std::string& dir) {
  State& s = state();
  std::call_once(s.once, [&] { do_load(s, dir); });
  return s.status;
}

bool loaded() { return state().loaded; }

bool matmul(const GemmArgs& g, const float* a, const float* b, const float* bias, float* c) {
  State& s = state();
  if (!s.loaded || (bias != nullptr && g.batch > 1)) return false;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.handle == nullptr) {
    check_status(s, s.api.create(&s.handle), "cublasLtCreate");
    check(cudaMalloc(&s.workspace, kWorkspaceBytes), "matmul (cuBLASLt workspace)");
  }
  const int64_t alignment = common_alignment(a, b, bias, c);
  const Key key{
      {g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.stride_a, g.stride_b, g.stride_c, g.batch, alignment},
      static_cast<unsigned>(g.trans_a) | static_cast<unsigned>(g.trans_b) << 1 |
          static_cast<unsigned>(bias != nullptr) << 2 | static_cast<unsigned>(g.accumulate) << 3 |
          static_cast<unsigned>(allow_tf32()) << 4};
  auto [it, inserted] = s.plans.try_emplace(key);
  Plan& plan = it->second;
  if (inserted) make_plan(s, plan, g, alignment, bias != nullptr);
  if (!plan.ok) return false;
  check_status(s, run(s, plan, g, a, b, bias, c), "matmul");
  return true;
}

int plans() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int count = 0;
  for (const auto& entry : s.plans) count += entry.second.ok;
  return count;
}

}  // namespace ag::cuda::lt
