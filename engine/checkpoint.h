#pragma once

#include <functional>

#include "engine/tensor.h"

namespace ag {

// Note [Activation checkpointing]
// As torch.utils.checkpoint.checkpoint(fn, *inputs, use_reentrant=False) in PyTorch 2.15:
// checkpoint(fn, inputs) runs fn(inputs) and returns its outputs with their histories, but keeps
// none of the values fn's ops save for backward. It runs fn under saved-tensor hooks (Note
// [Saved-tensor hooks], engine/saved_tensor_hooks.h) whose pack keeps only the value's number
// (the k-th value fn saved). The first unpack in a backward runs fn again on the same inputs, with
// grad mode on, under hooks that keep each value saved by number, and hands back the k-th; each
// recomputed value is freed when it is unpacked, or when the value it stands for is released. A
// later backward through a retained graph recomputes again.
//
// So fn must run the same ops on the same inputs each time: the recomputation must save as many
// values, of the same shapes, or the unpack raises. The engine's random ops take their seed as an
// argument (dropout(x, p, train, seed)), so a recomputed dropout draws the mask of the forward
// with no generator state to restore, which PyTorch must save and reset. An input written in
// place after the forward makes the recomputation raise, as PyTorch's saved input does.
// The inputs are kept as aliases of their data with their flags (Note [Saved values hold no
// cycles]): the recomputation runs on fresh leaves that require grad as the inputs did, so that
// its ops save exactly the slots the forward's saved (Note [Guarded saves]).
//
// Memory: between forward and backward only fn's outputs and inputs stay alive; in backward one
// checkpoint's values at a time. engine/tests/checkpoint_test measures a 20-layer MLP's peak bytes,
// paper/ (reproduce --only 045) its step time beside PyTorch's checkpoint.
using CheckpointFunction = std::function<TensorList(const TensorList&)>;

TensorList checkpoint(const CheckpointFunction& fn, const TensorList& inputs);

}  // namespace ag
