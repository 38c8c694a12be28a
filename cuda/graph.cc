#include "cuda/graph.h"

#include <cuda_runtime.h>

#include <string>

#include "cuda/check.h"
#include "cuda/cuda.h"
#include "cuda/cuda_allocator.h"
#include "cuda/stream.h"
#include "engine/error.h"

namespace ag::cuda {

struct Graph::Impl {
  cudaGraphExec_t exec = nullptr;
  CachingAllocator::Pool* pool = nullptr;
};

Graph::Graph() : impl_(std::make_unique<Impl>()) {}

Graph::~Graph() {
  // A replay still in flight finishes first: the executable is freed when it completes, and
  // the pool's blocks go to work queued after it on the same stream.
  if (impl_->exec != nullptr) cudaGraphExecDestroy(impl_->exec);
  if (impl_->pool != nullptr) caching_allocator().release_pool(impl_->pool);
}

void Graph::capture(const std::function<void()>& work) {
  AG_CHECK(is_available(), "cuda::Graph::capture: ", unavailable_reason());
  AG_CHECK(impl_->exec == nullptr, "cuda::Graph::capture: this graph holds a capture already");
  CachingAllocator& allocator = caching_allocator();
  impl_->pool = allocator.begin_pool();
  // Relaxed: a block the cache lacks may still be allocated (cudaMalloc) while capturing.
  cudaError_t begun = cudaStreamBeginCapture(stream(), cudaStreamCaptureModeRelaxed);
  std::string failure;
  if (begun != cudaSuccess) {
    failure = std::string("cudaStreamBeginCapture: ") + cudaGetErrorName(begun);
  } else {
    try {
      work();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended =
      begun == cudaSuccess ? cudaStreamEndCapture(stream(), &graph) : cudaSuccess;
  allocator.end_pool();
  if (failure.empty() && ended != cudaSuccess) {
    failure = std::string("the captured work did something a graph cannot hold (") +
              cudaGetErrorName(ended) + ")";
  }
  cudaError_t made = cudaSuccess;
  if (failure.empty()) made = cudaGraphInstantiate(&impl_->exec, graph, 0);
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (failure.empty() && made != cudaSuccess) {
    failure = std::string("cudaGraphInstantiate: ") + cudaGetErrorName(made);
  }
  if (!failure.empty()) {
    cudaGetLastError();  // a failed capture leaves an error for the next check: clear it
    impl_->exec = nullptr;
    allocator.release_pool(impl_->pool);
    impl_->pool = nullptr;
    fail("cuda::Graph::capture: ", failure, "; nothing was captured");
  }
}

void Graph::replay() {
  AG_CHECK(impl_->exec != nullptr, "cuda::Graph::replay: nothing was captured");
  check(cudaGraphLaunch(impl_->exec, stream()), "cuda::Graph::replay");
}

bool Graph::captured() const { return impl_->exec != nullptr; }

int64_t Graph::pool_bytes() const {
  return impl_->pool != nullptr ? caching_allocator().pool_bytes(impl_->pool) : 0;
}

}  // namespace ag::cuda
