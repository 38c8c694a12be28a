// Issue 44's workloads: views in loops, forward and backward, as PyTorch programs write them.
//
// An RNN over time slices: x [batch, steps, input], W [input, hidden], U [hidden, hidden], all
// requiring grad, and out = zeros [batch, steps, hidden] written one time slice at a time
// through a select view:
//   h = zeros [batch, hidden]
//   for t in 0..steps-1:  h = tanh(x[:, t] @ W + h @ U);  out[:, t] = h   (copy_ into a view)
//   dx, dW, dU = grad(out.sum(), {x, W, U})
// Each write through out[:, t] rebases out's history (Note [In-place ops on views], ops/views.h:
// PyTorch's CopySlices), and each x[:, t] is a select view whose gradient is x-shaped.
//
// Joining 1,000 slices: forward + grad(y, inputs, grad_outputs = G), G a fixed [slices, width]
// weighting, for
//   cat          y = cat(a_0..a_999, 0)           a_i leaves [1, width]
//   stack        y = stack(a_0..a_999, 0)         a_i leaves [width]
//   split + cat  y = cat(x.split(1, 0), 0)        x a leaf [slices, width]
//   unbind + stack  y = stack(x.unbind(0), 0)     x a leaf [slices, width]
//
// Every input is a closed-form pattern of its element's index (pattern_values), so that the
// PyTorch peer (paper/peers/torch_peer.py) builds the very same values and the gradients of
// both can be compared (checksums).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace ag::paper {

// n float32 values v_i = (((i * 2654435761 + salt) mod 2^32) / 2^32 * 2 - 1) * scale, computed in
// double and rounded once: the peer computes the same expression in float64 with torch.
std::vector<double> pattern_values(int64_t n, int64_t salt, double scale);
Tensor pattern_tensor(const Shape& shape, int64_t salt, double scale);

// A checksum of gradients that a misplaced element changes: sum over every element k, in order
// over the list, of g_k * (k mod 7 + 1), in double.
double gradient_checksum(const TensorList& grads);

struct RnnConfig {
  int batch = 256;
  int steps = 64;
  int width = 256;  // input = hidden
};

struct RnnInputs {
  Tensor x, w, u;  // leaves that require grad
};
RnnInputs make_rnn_inputs(const RnnConfig& config);

// The forward (out, still holding its graph) and the bytes its ops saved for backward (the
// engine's counter: numel * element size of every saved tensor, each save counted).
struct RnnForward {
  Tensor out;
  int64_t bytes_saved = 0;
};
RnnForward rnn_forward(const RnnInputs& in, const RnnConfig& config);
// One step: the forward and {dx, dW, dU} = grad(out.sum(), {x, W, U}).
TensorList rnn_step(const RnnInputs& in, const RnnConfig& config);

enum class JoinKind { kCat, kStack, kSplitCat, kUnbindStack };
inline constexpr JoinKind kJoinKinds[] = {JoinKind::kCat, JoinKind::kStack, JoinKind::kSplitCat,
                                          JoinKind::kUnbindStack};
// "cat", "stack", "split_cat", "unbind_stack": the peer's task argument and figures.tsv's.
const char* join_name(JoinKind kind);
// The row label: "cat of 1000 [1, 64] leaves", ...
std::string join_label(JoinKind kind, int slices, int width);

struct JoinConfig {
  int slices = 1000;
  int width = 64;
};

struct JoinInputs {
  JoinKind kind = JoinKind::kCat;
  TensorList inputs;  // the leaves: 1,000 slices, or the one tensor split / unbound
  Tensor weights;     // grad_outputs, [slices, width]
};
JoinInputs make_join_inputs(JoinKind kind, const JoinConfig& config);
// One step: the forward, then the gradients of `inputs`.
TensorList join_step(const JoinInputs& in);

}  // namespace ag::paper
