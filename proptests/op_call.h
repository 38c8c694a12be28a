#pragma once

// Calls an op of the list by its name (Note [Op schema], ops/schema.h), so that a generator runs an
// elementwise unary op from its row in the traits table (Note [Op traits], proptests/op_traits.h)
// with no call of its own.

#include "engine/tensor.h"
#include "ops/op_list.h"

namespace ag::proptests {

// The elementwise unary op `op` on `x`, as ops/ops.h's function of the same name runs it.
Tensor call_unary(ops::OpId op, const Tensor& x);

}  // namespace ag::proptests
