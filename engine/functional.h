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
// [Batched tangents], engine/forward_ad.h) whose tangents are the identity; jacrev from one vjp
// whose cotangents are batched so (Note [Batched cotangents]); hessian is jacfwd of the gradient,
// one batched hvp. The versions one column or row at a time (one jvp, vjp or hvp per unit
// vector) stay as their reference. Inputs need not require grad; where the caller's do, the
// results are differentiable in them (a transform of a transform composes).
//
// Note [Batched cotangents]
// A vjp is linear in its cotangent, so the tangent of vjp(u) along a tangent w of u is vjp(w).
// jacrev therefore feeds the backward of one forward a zero cotangent whose batched tangent
// (Note [Batched tangents]) holds the unit cotangents of every output element: the backward
// formulas are ops, each takes its batching rule, and the gradients' tangents are all rows of the
// Jacobian at once, as torch.func.jacrev's vmap over the vjp gives them. The zero primal costs one
// unbatched backward more; no backward formula needs a batched version of its own.
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
// outputs[o].shape() ++ primals[i].shape(). jacrev: one vjp with a batch of cotangents, one per
// output element; jacrev_by_rows: one vjp per output element; jacfwd: one jvp with a batch of
// tangents, one per input element; jacfwd_by_columns: one jvp per input element.
std::vector<TensorList> jacrev(const Function& f, const TensorList& primals);
std::vector<TensorList> jacrev_by_rows(const Function& f, const TensorList& primals);
std::vector<TensorList> jacfwd(const Function& f, const TensorList& primals);
std::vector<TensorList> jacfwd_by_columns(const Function& f, const TensorList& primals);

// For f from one tensor to one single-element tensor: the Hessian-vector product H(x) v, by
// forward-over-reverse, and the Hessian, of shape x.shape() ++ x.shape(): by one batched hvp
// (hessian) or one hvp per element of x (hessian_by_columns).
Tensor hvp(const Function& f, const Tensor& x, const Tensor& v);
Tensor hessian(const Function& f, const Tensor& x);
Tensor hessian_by_columns(const Function& f, const Tensor& x);

}  // namespace ag::func
