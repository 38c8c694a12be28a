// The one stream all CUDA work of this process runs on (Note [One stream]).
#pragma once

#include <cuda_runtime.h>

namespace ag::cuda {

// Note [One stream]
// Every kernel, cuBLAS call and device-to-device copy goes to one stream, created on first use,
// so work runs in the order it was queued: a block freed while a queued kernel still reads it is
// safe to hand out again (cuda_allocator.h), and no op needs an event. It is a blocking stream,
// not the legacy default stream, for one reason: the default stream cannot be captured into a
// CUDA graph (graph.h). Being blocking, it still orders itself with the synchronous cudaMemcpy of
// host reads (Tensor::to_vector, item), which run on the legacy default stream and so wait for
// everything queued here.
cudaStream_t stream();

}  // namespace ag::cuda
