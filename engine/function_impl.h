#pragma once

// Function<F>::apply, kept out of function.h so that header reads as the API.

#include <typeinfo>

#include "engine/engine_ops.h"
#include "engine/error.h"
#include "engine/grad_mode.h"

namespace ag {

namespace detail {
template <typename F, typename = void>
struct FunctionName {
  static std::string get() { return typeid(F).name(); }
};
template <typename F>
struct FunctionName<F, std::void_t<decltype(F::name)>> {
  static std::string get() { return F::name; }
};
}  // namespace detail

template <typename F>
TensorList Function<F>::apply(const TensorList& inputs) {
  // A trace would record forward's ops and lose backward (Note [Tracing hook], ops/trace_hook.h).
  AG_CHECK(!engine_ops::tracing(), "Function '", detail::FunctionName<F>::get(),
           "': custom Functions cannot be traced (their backward is not an op of the op set)");
  auto state = std::make_unique<FunctionState>();
  for (const Tensor& t : inputs) {
    state->input_requires_grad.push_back(t.defined() && t.requires_grad());
    state->input_shapes.push_back(t.defined() ? t.shape() : Shape{});
  }
  EdgeList edges = custom_function_edges(inputs, *state);
  ForwardCtx ctx(*state);
  TensorList outputs;
  {
    NoGradGuard no_grad;  // forward's own ops are not recorded: the node stands for them
    outputs = F::forward(ctx, inputs);
  }
  static const FunctionInfo info(detail::FunctionName<F>::get());
  return wrap_custom_outputs(info, &F::backward, inputs, std::move(edges), std::move(outputs),
                             std::move(state), std::move(ctx.to_save_), ctx.non_differentiable_,
                             ctx.dirty_);
}

}  // namespace ag
