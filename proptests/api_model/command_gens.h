#pragma once

// The generators of each kind of command (inside rc::gen::exec). Each returns a command valid in
// `m`, or null when the state offers nothing for it (gen_command then draws another kind).

#include "proptests/api_model/commands.h"

namespace ag::proptests {

// tensor_commands.cc
CommandPtr make_leaf(const Model& m);
CommandPtr make_op(const Model& m);  // elementwise, scalar, reductions, products, clone
CommandPtr make_view(const Model& m);
CommandPtr make_alias(const Model& m);  // detach, dropout returning its input
CommandPtr make_inplace(const Model& m);
// Inside a dual level: a write whose self or other reaches a tangent.
CommandPtr make_inplace_reaching_tangents(const Model& m);
CommandPtr make_custom(const Model& m);

// autograd_commands.cc
CommandPtr make_set_requires_grad(const Model& m);
CommandPtr make_retain_grad(const Model& m);
CommandPtr make_register_hook(const Model& m);  // register_hook, or remove() of an earlier one
// t.grad_fn.register_prehook / register_hook, t.register_post_accumulate_grad_hook.
CommandPtr make_node_hook(const Model& m);
CommandPtr make_set_grad(const Model& m);
CommandPtr make_take_grad(const Model& m);
CommandPtr make_backward(const Model& m);
CommandPtr make_grad(const Model& m);

// dual_commands.cc: enter/exit a dual level, make_dual, unpack_dual (Note [Model dual levels]).
CommandPtr make_dual_call(const Model& m);

// saved_hook_commands.cc: open a saved-tensor-hooks scope, close the innermost (Note [Model
// saved-tensor hooks]).
CommandPtr make_saved_hooks(const Model& m);

}  // namespace ag::proptests
