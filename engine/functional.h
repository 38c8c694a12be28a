#pragma once

// Function transforms, as torch.func's: jvp, vjp, jacfwd, jacrev, hvp, hessian, over functions
// from tensors to tensors (Note [Transforms]). Forward mode is engine/forward_ad.h.

#include <functional>
#include <vector>

#include "engine/tensor.h"

namespace ag::func {

// Note [Transforms]
// Each transform is a few lines over the two modes: jvp runs the function on dual tensors (Note
// [Forward mode], engine/forward_ad.h) and unpacks the tangents of its outputs; vjp runs it on
// fresh leaves and returns grad() through them; hvp is forward-over-reverse, the jvp of the
// gradient: the backward formulas are ops, so inside the dual level the gradient carries the
// Hessian-vector product as its tangent, for about the cost of one more gradient. jacfwd builds
// a Jacobian from the jvps along every unit tangent, all at once in one batched level (Note
// [Batched tangents], engine/forward_ad.h) whose tangents are the identity; jacrev row by row
// (one vjp per unit cotangent); hessian is jacfwd of the gradient, one batched hvp. The
// column-by-column versions (one jvp or hvp per unit tangent) stay as their reference. Inputs need
// not require grad; where the caller's do, the results are differentiable in them (a transform of a
// transform composes).
using Function = std::function<TensorList(const TensorList&)>;

struct JvpResult {
  TensorList outputs;
  TensorList tangents;  // d outputs along `tangents` (zeros for an output no input reaches)
};
// torch.func.jvp(f, primals, tangents): one tangent per primal, of its shape, dtype and device.
JvpResult jvp(const Function& f, const TensorList& primals, const TensorList& tangents);

struct VjpResult {
  TensorList outputs;
  // cotangents (one per output, of its shape) -> one gradient per primal (zeros where unused).
  std::function<TensorList(const TensorList& cotangents)> vjp;
};
// torch.func.vjp(f, *primals).
VjpResult vjp(const Function& f, const TensorList& primals);

// The Jacobian of every output with respect to every input: result[o][i] has shape
// outputs[o].shape() ++ primals[i].shape(). jacrev: one vjp per output element; jacfwd: one jvp
// with a batch of tangents, one per input element; jacfwd_by_columns: one jvp per input element.
std::vector<TensorList> jacrev(const Function& f, const TensorList& primals);
std::vector<TensorList> jacfwd(const Function& f, const TensorList& primals);
std::vector<TensorList> jacfwd_by_columns(const Function& f, const TensorList& primals);

// For f from one tensor to one single-element tensor: the Hessian-vector product H(x) v, by
// forward-over-reverse, and the Hessian, of shape x.shape() ++ x.shape(): by one batched hvp
// (hessian) or one hvp per element of x (hessian_by_columns).
Tensor hvp(const Function& f, const Tensor& x, const Tensor& v);
Tensor hessian(const Function& f, const Tensor& x);
Tensor hessian_by_columns(const Function& f, const Tensor& x);

}  // namespace ag::func
