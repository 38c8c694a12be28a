// CUDA graphs: an eager step's device work captured once and replayed (Note [Captured steps]).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace ag::cuda {

// Note [Captured steps]
// A step of eager autograd queues a few hundred small launches, and the host spends more time
// deciding and queueing them (the engine's walk, the ops' checks, one API call per kernel) than
// a small batch spends on the GPU. A captured step records what one run of the step queues -
// kernels, cuBLAS calls, device copies - into a CUDA graph, then replays it with one launch: the
// engine, the ops and the launches do not run again. What is replayed is exactly the captured
// run's device work on the captured run's memory:
//   - inputs are read where they were (write new values into the same tensors, in place, to
//     feed a replay new data), and outputs are written where the capture put them: tensors the
//     captured work returned or stored (y_xx, .grad) hold each replay's results;
//   - the memory the capture used belongs to the graph (Note [Graph pools],
//     cuda/cuda_allocator.h) until it is destroyed;
//   - the host decisions are frozen: the nodes that ran, the shapes, the kernels chosen, the
//     products skipped for known zeros (Note [Known zeros]).
// Capture queues nothing: the first results come from the first replay. The work must not read
// device values on the host (item(), to_vector()): the capture fails with an ag::Error then,
// and nothing is kept. PyTorch offers the same with torch.cuda.CUDAGraph, whose capture of a
// backward pass works the same way.
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Records the device work that `work` queues. Throws ag::Error if there is no CUDA device,
  // if this graph holds a capture already, if another capture is under way, or if `work` throws
  // or does something a graph cannot hold; then nothing is kept.
  void capture(const std::function<void()>& work);
  // Queues the captured work again (asynchronously, like any kernel; cuda::synchronize() or a
  // host read waits for it). Throws ag::Error before a capture.
  void replay();
  bool captured() const;
  // Bytes of device memory the graph's pool holds (Note [Graph pools]).
  int64_t pool_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ag::cuda
