#pragma once

// The fused formula kernels (Note [Fused formula kernels], ops/fused.cc) and the kernels that add
// a formula's value into a waiting gradient (Note [Sums fused into formulas], engine/engine.cc):
// the rules' fusion hooks (ops/elementwise.cc) and the JIT's OpForward::add_into call them.

#include "engine/tensor.h"

namespace ag::ops {

class OpSpec;

// a * ((b * scale) * c) as one kernel and, under create_graph, one recorded node.
Tensor scaled_product(const Tensor& a, const Tensor& b, const Tensor& c, double scale);
// Its spec (ops/elementwise.cc).
const OpSpec& scaled_product_spec();

// sum += tanh_backward(grad, result), sum += sigmoid_backward(grad, result) and
// sum += scaled_product(a, b, c, scale) in one pass, where every operand has sum's layout; false,
// writing nothing, where one does not.
bool add_tanh_backward_into(const Tensor& sum, const Tensor& grad, const Tensor& result);
bool add_sigmoid_backward_into(const Tensor& sum, const Tensor& grad, const Tensor& result);
bool add_scaled_product_into(const Tensor& sum, const Tensor& a, const Tensor& b, const Tensor& c,
                             double scale);

}  // namespace ag::ops
