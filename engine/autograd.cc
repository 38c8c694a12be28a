#include "engine/autograd.h"

#include "engine/engine.h"
#include "engine/engine_ops.h"
#include "engine/error.h"
#include "engine/node.h"
#include "engine/scratch_pool.h"

namespace ag {

namespace {

// Everything is validated before the engine runs, so a bad call leaves the graph untouched.
// `request` comes empty from a ScratchLease.
template <typename Args>
void make_request(ExecuteRequest& request, const char* api, TensorArgs outputs,
                  TensorArgs grad_outputs, const Args& args) {
  AG_CHECK(!outputs.empty(), api, ": no tensors to differentiate");
  AG_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), api, ": got ",
           grad_outputs.size(), " gradients for ", outputs.size(), " tensors");
  request.roots.reserve(outputs.size());
  request.root_grads.reserve(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    AG_CHECK(out.defined(), api, ": tensor ", i, " is undefined");
    AG_CHECK(out.requires_grad(), api, ": tensor ", i, " (", out.describe(),
             ") does not require grad and has no grad_fn");
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      AG_CHECK(out.numel() == 1, api,
               ": grad can be implicitly created only for outputs with one "
               "element; tensor ",
               i, " has shape ", to_string(out.shape()), ", so pass a gradient for it");
      g = engine_ops::ones_like(out);
    } else {
      AG_CHECK(g.shape() == out.shape(), api, ": gradient ", i, " has shape ", to_string(g.shape()),
               " but tensor ", i, " has shape ", to_string(out.shape()));
      AG_CHECK(g.dtype() == out.dtype(), api, ": gradient ", i, " has dtype ", to_string(g.dtype()),
               " but tensor ", i, " has dtype ", to_string(out.dtype()));
      AG_CHECK(g.device() == out.device(), api, ": gradient ", i, " is on ", to_string(g.device()),
               " but tensor ", i, " is on ", to_string(out.device()));
    }
    // A leaf view that requires grad only through its base has no edge (Note [View flags follow
    // the base] in ops/views.h): PyTorch refuses it as a root too.
    Edge root = gradient_edge(out);
    AG_CHECK(root.is_valid(), api, ": tensor ", i, " (", out.describe(),
             ") is a view made without history that requires grad only through its base, so "
             "it has no grad_fn to differentiate");
    request.roots.push_back(std::move(root));
    request.root_grads.push_back(std::move(g));
  }
  request.create_graph = args.create_graph();
  request.keep_graph = args.retain_graph();
  request.options = args.engine_options();
}

// The targets of grad() or backward(inputs=...). backward() makes a non-leaf input retain grad
// (Note [Hooks], engine/hooks.h), each as it checks it, before the next input is checked, as
// PyTorch's run_backward. A template parameter, not a test per input: grad() of a tiny graph
// would pay for it.
template <bool kRetain>
void add_targets(const char* api, ExecuteRequest& request, TensorArgs inputs) {
  request.targets.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    AG_CHECK(in.defined(), api, ": input ", i, " is undefined");
    AG_CHECK(in.requires_grad(), api, ": input ", i, " (", in.describe(),
             ") does not require grad, so it has no gradient");
    if (kRetain) in.retain_grad();
    request.targets.push_back(gradient_edge(in));
  }
}

}  // namespace

void backward(TensorArgs tensors, const BackwardArgs& args) {
  ScratchLease<ExecuteRequest> lease;
  ExecuteRequest& request = *lease;
  make_request(request, "backward", tensors, args.grad_tensors(), args);
  // A leaf input's AccumulateGrad runs (once, however often the leaf is named); a non-leaf input
  // retains grad, so its retains-grad hook writes .grad where its gradient is captured, and in
  // every later call through it (Note [Hooks]). So each input takes its gradient where PyTorch
  // runs a leaf's AccumulateGrad or a non-leaf's hook, and in-place accumulation into a .grad
  // that shares storage with another gradient, and an error raised later in the call, leave what
  // they leave in PyTorch (x.grad = g; backward(y, g, inputs={x, y}) with y = x + x).
  request.accumulate = true;
  add_targets<true>("backward", request, args.inputs());
  request.allow_unused = true;  // an input nothing depends on simply gets no gradient
  execute(request);
}

TensorList grad(TensorArgs outputs, TensorArgs inputs, const GradArgs& args) {
  ScratchLease<ExecuteRequest> lease;
  ExecuteRequest& request = *lease;
  make_request(request, "grad", outputs, args.grad_outputs(), args);
  AG_CHECK(!inputs.empty(), "grad: no inputs to differentiate with respect to");
  add_targets<false>("grad", request, inputs);
  request.allow_unused = args.allow_unused();
  TensorList grads = execute(request);
  // An input that was reached but got no gradient (e.g. a custom Function returned none for it)
  // gets zeros, unless the caller asked for undefined results.
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined() && !args.allow_unused()) grads[i] = engine_ops::zeros_like(inputs[i]);
  }
  return grads;
}

}  // namespace ag
