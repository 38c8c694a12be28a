// The CPU-only build of //cuda (no nvcc when Bazel configured @cuda_config): the same API,
// no kernels, nothing registered. CUDA tensors fail with "no allocator for device cuda:0".
#include "cuda/cuda.h"
#include "cuda/graph.h"
#include "cuda/stub_reason.h"
#include "engine/error.h"

namespace ag::cuda {

bool built_with_cuda() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
std::string unavailable_reason() {
  return std::string("built without CUDA (") + AG_CUDA_STUB_REASON +
         " when Bazel configured "
         "@cuda_config; see cuda/README.md)";
}
std::string describe_device() { return unavailable_reason(); }
void synchronize() {}
void profiler_start() {}
void profiler_stop() {}

void set_allow_tf32(bool) {}
bool allow_tf32() { return false; }
void set_gemm_backend(GemmBackend) {}
GemmBackend gemm_backend() { return GemmBackend::kBuiltin; }
bool cublas_loaded() { return false; }
std::string cublas_status() { return unavailable_reason(); }
int product_plans() { return 0; }

int64_t cached_bytes() { return 0; }
void empty_cache() {}

struct Graph::Impl {};
Graph::Graph() = default;
Graph::~Graph() = default;
void Graph::capture(const std::function<void()>&) {
  fail("cuda::Graph::capture: ", unavailable_reason());
}
void Graph::replay() { fail("cuda::Graph::replay: nothing was captured"); }
bool Graph::captured() const { return false; }
int64_t Graph::pool_bytes() const { return 0; }

}  // namespace ag::cuda
