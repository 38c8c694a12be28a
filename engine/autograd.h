#pragma once

#include <optional>

#include "engine/options.h"
#include "engine/tensor.h"

namespace ag {

// torch.autograd.backward: accumulates d(sum of tensors * grad_tensors)/d(leaf) into each leaf's
// .grad. With `inputs`, accumulates only into those (leaves or not) and runs only the part of
// the graph that leads to them; the inputs' own grad_fn are not run.
// grad_tensors may be empty (every tensor must then have one element) or hold one entry per
// tensor (an undefined entry means "ones" for a one-element tensor).
// retain_graph defaults to create_graph. `options` defaults to current_options().
// As in PyTorch, backward(create_graph=true) makes a leaf's .grad hold a graph that refers back to
// the leaf, a reference cycle: reset it with set_grad(Tensor()) when done.
void backward(const TensorList& tensors, const TensorList& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const TensorList& inputs = {}, std::optional<EngineOptions> options = std::nullopt);

// torch.autograd.grad: returns d(sum of outputs * grad_outputs)/d(input) for each input, without
// touching any .grad. An input no output depends on is an error unless allow_unused, in which
// case its result is an undefined Tensor.
TensorList grad(const TensorList& outputs, const TensorList& inputs,
                const TensorList& grad_outputs = {},
                std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                bool allow_unused = false, std::optional<EngineOptions> options = std::nullopt);

// Shorthand for backward({t}).
inline void backward(const Tensor& t) { backward(TensorList{t}); }

}  // namespace ag
