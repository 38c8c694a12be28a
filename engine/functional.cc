#include "engine/functional.h"

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/forward_ad.h"
#include "ops/ops.h"

namespace ag::func {
namespace {

// The unit tensor with a 1 at flat position k, like `like`.
Tensor unit(const Tensor& like, int64_t k) {
  std::vector<double> values(static_cast<size_t>(like.numel()), 0.0);
  values[static_cast<size_t>(k)] = 1.0;
  return ops::from_vector(values, like.shape(), like.dtype(), like.device());
}

// The leaf a vjp differentiates with respect to: the primal itself seen through an alias when it
// requires grad (so the result stays differentiable in it), else a fresh leaf that requires grad;
// either way with the primal's tangents (Note [Transforms]: forward-over-reverse).
Tensor differentiable_stand_in(const Tensor& p) {
  if (p.requires_grad()) return ops::alias(p);
  Tensor leaf = p.detach();
  leaf.set_requires_grad(true);
  if (forward_ad::live()) forward_ad::copy_tangents(p, leaf);
  return leaf;
}

// a ++ b: a Jacobian block's shape, an output's then an input's.
Shape joined(const Shape& a, const Shape& b) {
  Shape out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// `columns` (each of shape `inner`), stacked along a new last dim and reshaped to inner ++ outer.
Tensor assemble(const TensorList& columns, const Shape& inner, const Shape& outer) {
  const Shape shape = joined(inner, outer);
  if (columns.empty()) return ops::zeros(shape);
  return ops::reshape(ops::stack(columns, -1), shape);
}

// [batch, *shape].
Shape batched_shape(int64_t batch, const Shape& shape) { return joined({batch}, shape); }

// Rows `offset`.. of the identity of size `batch`, as a batched tangent of `like`: row b is the
// unit tangent at flat position b - offset (zeros outside like's rows).
Tensor identity_rows(int64_t batch, int64_t offset, const Tensor& like) {
  const int64_t n = like.numel();
  std::vector<double> values(static_cast<size_t>(batch * n), 0.0);
  for (int64_t k = 0; k < n; ++k) values[static_cast<size_t>((offset + k) * n + k)] = 1.0;
  return ops::from_vector(values, batched_shape(batch, like.shape()), like.dtype(), like.device());
}

// f's outputs at duals of `primals` carrying `tangents` at `level`, and the outputs' tangents
// there (zeros where an output carries none; at a batched level, Note [Batched tangents], each is
// [batch, *its primal's shape]).
JvpResult jvp_at(const DualLevel& level, const Function& f, const TensorList& primals,
                 const TensorList& tangents) {
  TensorList duals;
  for (size_t i = 0; i < primals.size(); ++i) {
    duals.push_back(make_dual(primals[i], tangents[i], level.index()));
  }
  JvpResult out;
  for (const Tensor& o : f(duals)) {
    UnpackedDual u = unpack_dual(o, level.index());
    const Shape shape = forward_ad::tangent_shape(u.primal, level.index());
    if (!u.tangent.defined()) {
      u.tangent = shape == u.primal.shape()
                      ? ops::zeros_like(u.primal)
                      : ops::zeros(shape, u.primal.dtype(), u.primal.device());
    }
    out.tangents.push_back(std::move(u.tangent));
    out.outputs.push_back(std::move(u.primal));
  }
  return out;
}

// Rows `offset`..`offset + inner.numel()` of a batched tangent of an output of shape `outer`
// (row k: the column for element k of an input of shape `inner`), as the Jacobian block
// outer ++ inner.
Tensor block_of_rows(const Tensor& tangents, int64_t offset, const Shape& outer,
                     const Shape& inner) {
  const int64_t n = numel(inner), m = numel(outer);
  const Tensor rows = ops::reshape(ops::narrow(tangents, 0, offset, n), {n, m});
  return ops::reshape(ops::transpose(rows, 0, 1), joined(outer, inner));
}

}  // namespace

JvpResult jvp(const Function& f, const TensorList& primals, const TensorList& tangents) {
  AG_CHECK(primals.size() == tangents.size(), "jvp: expected one tangent per primal, got ",
           tangents.size(), " for ", primals.size());
  const DualLevel level;
  return jvp_at(level, f, primals, tangents);
}

VjpResult vjp(const Function& f, const TensorList& primals) {
  TensorList leaves;
  for (const Tensor& p : primals) leaves.push_back(differentiable_stand_in(p));
  VjpResult out;
  const TensorList outputs = f(leaves);
  // As torch.func.vjp's: the outputs are differentiable in the caller's primals only, so with
  // none that requires grad they carry no history (found by the conformance corpus).
  bool caller_grad = false;
  for (const Tensor& p : primals) caller_grad = caller_grad || p.requires_grad();
  for (const Tensor& o : outputs) out.outputs.push_back(caller_grad ? o : ops::detach(o));
  out.vjp = [leaves, outputs](const TensorList& cotangents) {
    AG_CHECK(cotangents.size() == outputs.size(), "vjp: expected one cotangent per output, got ",
             cotangents.size(), " for ", outputs.size());
    bool create_graph = false;
    for (const Tensor& t : leaves) create_graph = create_graph || !t.is_leaf();
    for (const Tensor& t : cotangents) create_graph = create_graph || t.requires_grad();
    TensorList grads = grad(outputs, leaves,
                            GradArgs()
                                .grad_outputs(cotangents)
                                .allow_unused()
                                .retain_graph(true)
                                .create_graph(create_graph));
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) grads[i] = ops::zeros_like(leaves[i]);
    }
    return grads;
  };
  return out;
}

std::vector<TensorList> jacrev_by_rows(const Function& f, const TensorList& primals) {
  const VjpResult v = vjp(f, primals);
  std::vector<TensorList> jac(v.outputs.size());
  for (size_t o = 0; o < v.outputs.size(); ++o) {
    std::vector<TensorList> rows(primals.size());  // rows[i][k]: d outputs[o][k] / d primals[i]
    TensorList cotangents;
    for (const Tensor& out : v.outputs) cotangents.push_back(ops::zeros_like(out));
    for (int64_t k = 0; k < v.outputs[o].numel(); ++k) {
      cotangents[o] = unit(v.outputs[o], k);
      const TensorList g = v.vjp(cotangents);
      for (size_t i = 0; i < primals.size(); ++i) rows[i].push_back(g[i]);
    }
    for (size_t i = 0; i < primals.size(); ++i) {
      const Shape shape = joined(v.outputs[o].shape(), primals[i].shape());
      jac[o].push_back(rows[i].empty() ? ops::zeros(shape, primals[i].dtype())
                                       : ops::reshape(ops::stack(rows[i], 0), shape));
    }
  }
  return jac;
}

std::vector<TensorList> jacrev(const Function& f, const TensorList& primals) {
  const VjpResult v = vjp(f, primals);
  int64_t batch = 0;  // one cotangent per element of every output
  for (const Tensor& o : v.outputs) batch += o.numel();
  if (batch == 0) return jacrev_by_rows(f, primals);  // no row: the primals' shapes only
  // Note [Batched cotangents]: zero cotangents whose tangents are the identity's rows.
  const DualLevel level(batch);
  TensorList cotangents;
  for (int64_t o = 0, offset = 0; o < static_cast<int64_t>(v.outputs.size()); ++o) {
    const Tensor& out = v.outputs[o];
    cotangents.push_back(
        make_dual(ops::zeros_like(out), identity_rows(batch, offset, out), level.index()));
    offset += out.numel();
  }
  const TensorList grads = v.vjp(cotangents);
  std::vector<TensorList> jac(v.outputs.size());
  for (size_t i = 0; i < primals.size(); ++i) {
    Tensor rows = unpack_dual(grads[i], level.index()).tangent;  // [batch, *primals[i]'s shape]
    if (!rows.defined())
      rows = ops::zeros(batched_shape(batch, primals[i].shape()), primals[i].dtype(),
                        primals[i].device());
    for (int64_t o = 0, offset = 0; o < static_cast<int64_t>(v.outputs.size()); ++o) {
      const Shape& outer = v.outputs[o].shape();
      jac[o].push_back(ops::reshape(ops::narrow(rows, 0, offset, numel(outer)),
                                    joined(outer, primals[i].shape())));
      offset += numel(outer);
    }
  }
  return jac;
}

std::vector<TensorList> jacfwd_by_columns(const Function& f, const TensorList& primals) {
  std::vector<std::vector<TensorList>> columns;  // columns[o][i]: one per element of primals[i]
  TensorList outputs;
  for (size_t i = 0; i < primals.size(); ++i) {
    for (int64_t k = 0; k < primals[i].numel(); ++k) {
      TensorList tangents;
      for (size_t j = 0; j < primals.size(); ++j) {
        tangents.push_back(j == i ? unit(primals[i], k) : ops::zeros_like(primals[j]));
      }
      const JvpResult r = jvp(f, primals, tangents);
      if (columns.empty())
        columns.assign(r.outputs.size(), std::vector<TensorList>(primals.size()));
      outputs = r.outputs;
      for (size_t o = 0; o < r.tangents.size(); ++o) columns[o][i].push_back(r.tangents[o]);
    }
  }
  if (outputs.empty()) outputs = f(primals);  // every primal is empty: no column was computed
  std::vector<TensorList> jac(outputs.size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    for (size_t i = 0; i < primals.size(); ++i) {
      const TensorList none;
      jac[o].push_back(
          assemble(columns.empty() ? none : columns[o][i], outputs[o].shape(), primals[i].shape()));
    }
  }
  return jac;
}

std::vector<TensorList> jacfwd(const Function& f, const TensorList& primals) {
  int64_t batch = 0;  // one tangent per element of every primal
  for (const Tensor& p : primals) batch += p.numel();
  if (batch == 0) return jacfwd_by_columns(f, primals);  // no column: f's outputs' shapes only
  TensorList tangents;
  for (int64_t i = 0, offset = 0; i < static_cast<int64_t>(primals.size()); ++i) {
    tangents.push_back(identity_rows(batch, offset, primals[i]));
    offset += primals[i].numel();
  }
  const DualLevel level(batch);
  const JvpResult r = jvp_at(level, f, primals, tangents);
  std::vector<TensorList> jac(r.outputs.size());
  for (size_t o = 0; o < r.outputs.size(); ++o) {
    for (int64_t i = 0, offset = 0; i < static_cast<int64_t>(primals.size()); ++i) {
      jac[o].push_back(
          block_of_rows(r.tangents[o], offset, r.outputs[o].shape(), primals[i].shape()));
      offset += primals[i].numel();
    }
  }
  return jac;
}

namespace {

// x -> the gradient of f (one single-element tensor) at x: hvp's jvp is its tangent.
Function gradient_of(const Function& f) {
  return [f](const TensorList& xs) {
    const VjpResult r = vjp(f, xs);
    AG_CHECK(r.outputs.size() == 1 && r.outputs[0].numel() == 1,
             "hvp: the function must return one single-element tensor");
    return r.vjp({ops::ones_like(r.outputs[0])});
  };
}

}  // namespace

Tensor hvp(const Function& f, const Tensor& x, const Tensor& v) {
  return jvp(gradient_of(f), {x}, {v}).tangents[0];
}

Tensor hessian(const Function& f, const Tensor& x) {
  if (x.numel() == 0) return hessian_by_columns(f, x);
  const DualLevel level(x.numel());
  const JvpResult r = jvp_at(level, gradient_of(f), {x}, {identity_rows(x.numel(), 0, x)});
  return block_of_rows(r.tangents[0], 0, x.shape(), x.shape());
}

Tensor hessian_by_columns(const Function& f, const Tensor& x) {
  TensorList columns;
  for (int64_t k = 0; k < x.numel(); ++k) columns.push_back(hvp(f, x, unit(x, k)));
  return assemble(columns, x.shape(), x.shape());
}

}  // namespace ag::func
