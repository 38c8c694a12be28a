// Engine overhead on graphs whose kernels cost nothing (seed 000's regression check and issue 2):
//  - tiny graph: grad(a*b, {a, b}, {ones}) on 2x2 float32 (the seed's `torch.autograd.grad(a*b,
//    [a, b], gradient)`), forward included;
//  - scalar chain: y = x * s * s * ... (n multiplications by a scalar), grad(y.sum(), {x}), x of 4
//    elements, forward included (each call builds a fresh graph, as it must without retain_graph);
//    issue 45 runs it also with an identity hook (register_hook returning an undefined tensor: the
//    gradient goes on unchanged) on every intermediate y.
#pragma once

#include "engine/options.h"
#include "engine/tensor.h"

namespace ag::paper {

struct TinyGraphInputs {
  Tensor a, b, gradient;
};
TinyGraphInputs make_tiny_graph_inputs();
// One call of the tiny-graph workload; returns the sum of both gradients (a checksum).
double tiny_graph_call(const TinyGraphInputs& in);

struct ScalarChainInputs {
  Tensor x;
  int length = 1000;
};
ScalarChainInputs make_scalar_chain_inputs(int length);
// grad(y.sum(), {x}) through the chain, with an identity hook on every intermediate or without.
Tensor scalar_chain_grad(const ScalarChainInputs& in, bool identity_hooks = false);
// One call; returns the gradient's first element (a checksum).
double scalar_chain_call(const ScalarChainInputs& in, bool identity_hooks = false);

// Mean time of one call over `iters` calls under `options` (callers repeat these, interleaving
// option sets, and take medians).
double time_tiny_graph_us(const EngineOptions& options, int iters);
double time_scalar_chain_ms(const ScalarChainInputs& in, const EngineOptions& options, int iters);

}  // namespace ag::paper
