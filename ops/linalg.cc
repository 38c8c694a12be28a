// Matrix products. All of them reduce to one kernel, op(A) @ op(B) with optional transposes, and
// their gradients are products of the same kind, so no transpose is ever materialized and the
// derivatives are differentiable again.
//
// The seed's caveat (Note [Guarded saves]): mm's gradient for mat1 needs only mat2 and the one for
// mat2 only mat1, so when just one of them requires grad the other is not kept alive.
#include <algorithm>

#include "engine/error.h"
#include "ops/backend.h"
#include "ops/batched_jvp.h"
#include "ops/checks.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "ops/spec.h"

namespace ag::ops {
namespace {

Tensor product(const OpSpec& spec, const Tensor& a, const Tensor& b, bool ta, bool tb);
Tensor checked_product(const OpSpec& spec, const OpArgs& args, int64_t rank);

// C = op(A) op(B):  dA = G op(B)^T (or its transpose),  dB = op(A)^T G (or its transpose).
Tensor grad_mat1(const OpSpec& spec, const Tensor& g, const Tensor& b, bool ta, bool tb) {
  return ta ? product(spec, b, g, tb, true) : product(spec, g, b, false, !tb);
}
Tensor grad_mat2(const OpSpec& spec, const Tensor& g, const Tensor& a, bool ta, bool tb) {
  return tb ? product(spec, g, a, true, ta) : product(spec, a, g, !ta, false);
}

// mm(self, mat2) and bmm(self, mat2) share formulas; each formula multiplies with its own node's
// spec (c.spec()), so bmm's gradients are bmm's again.
struct Product {
  static constexpr Input self{0, "self"}, mat2{1, "mat2"};
  static OpSpec spec_named(const char* name, Tensor (*call)(const OpArgs&)) {
    return OpSpec(name,
                  {{self,
                    {mat2},
                    [](const Ctx& c) {
                      const auto& t = c.attrs<ProductAttrs>();
                      return grad_mat1(c.spec(), c.grad(), c[mat2], t.transpose_a, t.transpose_b);
                    }},
                   {mat2,
                    {self},
                    [](const Ctx& c) {
                      const auto& t = c.attrs<ProductAttrs>();
                      return grad_mat2(c.spec(), c.grad(), c[self], t.transpose_a, t.transpose_b);
                    }}},
                  {AliasKind::kPure, ProductAttrs{false, false}, call});
  }
};
const OpSpec kMm =
    Product::spec_named("mm", [](const OpArgs& a) { return checked_product(kMm, a, 2); });
const DeclareJvp mm_jvp{kMm, jvp_bilinear};
const OpSpec kBmm =
    Product::spec_named("bmm", [](const OpArgs& a) { return checked_product(kBmm, a, 3); });
const DeclareJvp bmm_jvp{kBmm, jvp_bilinear};

// Note [Batching rules]: op(ta) op(b) + op(a) op(tb) as matmuls, whose batch dims broadcast the
// tangents' leading one against the primals.
Tensor op_of(const Tensor& t, bool transposed) { return transposed ? transpose(t, -1, -2) : t; }
Tensor batched_product_jvp(const JvpContext& c) {
  const auto& [trans_a, trans_b] = c.attrs<ProductAttrs>();
  const Tensor ta = c.term_tangent(Product::self), tb = c.term_tangent(Product::mat2);
  const Tensor &a = c.primal(Product::self), &b = c.primal(Product::mat2);
  Tensor sum;
  if (ta.defined()) sum = matmul(op_of(ta, trans_a), op_of(b, trans_b));
  if (tb.defined()) add_term(sum, matmul(op_of(a, trans_a), op_of(tb, trans_b)));
  return sum;
}
const DeclareBatchedJvp mm_batched_jvp{kMm, batched_product_jvp};
const DeclareBatchedJvp bmm_batched_jvp{kBmm, batched_product_jvp};

Tensor product(const OpSpec& spec, const Tensor& a, const Tensor& b, bool ta, bool tb) {
  return record(spec, {&a, &b}, backend_for(a.device()).matmul(a, b, ta, tb, nullptr),
                ProductAttrs{ta, tb});
}

// Checks op(a) @ op(b), where op transposes the last two dims when ta (tb) is set.
void check_product(const char* op, const Tensor& a, const Tensor& b, int64_t rank, bool ta = false,
                   bool tb = false) {
  check_same_dtype_and_device(op, a, b);
  AG_CHECK(a.dim() == rank && b.dim() == rank, op, ": expected ", rank, "-D tensors, got ",
           a.describe(), " and ", b.describe());
  const int64_t ka = a.shape()[rank - (ta ? 2 : 1)], kb = b.shape()[rank - (tb ? 1 : 2)];
  AG_CHECK(ka == kb, op, ": shapes ", to_string(a.shape()), " and ", to_string(b.shape()),
           " cannot be multiplied (", ka, " vs ", kb, ")");
  AG_CHECK(rank == 2 || a.shape()[0] == b.shape()[0], op,
           ": batch sizes differ: ", to_string(a.shape()), " and ", to_string(b.shape()));
}

// mm and bmm as the JIT calls them: the same checks as mm() and bmm(), with the transposes the
// gradient products use.
Tensor checked_product(const OpSpec& spec, const OpArgs& args, int64_t rank) {
  const auto& t = args.attrs<ProductAttrs>();
  check_product(spec.name().c_str(), args.input(0), args.input(1), rank, t.transpose_a,
                t.transpose_b);
  return product(spec, args.input(0), args.input(1), t.transpose_a, t.transpose_b);
}

// addmm(self, mat1, mat2) = self + mat1 @ mat2
struct Addmm {
  static constexpr Input self{0, "self"}, mat1{1, "mat1"}, mat2{2, "mat2"};
  static const OpSpec spec;
};
const OpSpec Addmm::spec{
    "addmm",
    {{self, {}, [](const Ctx& c) { return c.grad(); }},
     {mat1, {mat2}, [](const Ctx& c) { return product(kMm, c.grad(), c[mat2], false, true); }},
     {mat2, {mat1}, [](const Ctx& c) { return product(kMm, c[mat1], c.grad(), true, false); }}},
    {AliasKind::kPure, NoAttrs(),
     [](const OpArgs& a) { return addmm(a[self], a[mat1], a[mat2]); }}};
// PyTorch's: self_t + mat1_t @ mat2 + mat1 @ mat2_t.
const DeclareJvp addmm_jvp{Addmm::spec, [](const JvpContext& c) {
                             Tensor t = c.tangent_or_zeros(Addmm::self);
                             // Note [Zero tangent terms]
                             const Tensor t1 = c.term_tangent(Addmm::mat1);
                             const Tensor t2 = c.term_tangent(Addmm::mat2);
                             if (t1.defined()) t = add(t, mm(t1, c.primal(Addmm::mat2)));
                             if (t2.defined()) t = add(t, mm(c.primal(Addmm::mat1), t2));
                             return t;
                           }};

// Note [Batching rules]: as addmm's rule, with matmul for mm.
const DeclareBatchedJvp addmm_batched_jvp{Addmm::spec, [](const JvpContext& c) {
                                            Tensor t =
                                                align_batched(c.tangent_or_zeros(Addmm::self), 2);
                                            const Tensor t1 = c.term_tangent(Addmm::mat1);
                                            const Tensor t2 = c.term_tangent(Addmm::mat2);
                                            if (t1.defined())
                                              t = add(t, matmul(t1, c.primal(Addmm::mat2)));
                                            if (t2.defined())
                                              t = add(t, matmul(c.primal(Addmm::mat1), t2));
                                            return t;
                                          }};

// linear(input, weight, bias) = input @ weight^T + bias: input [N, in], weight [out, in],
// bias [out]
struct Linear {
  static constexpr Input input{0, "input"}, weight{1, "weight"}, bias{2, "bias"};
  static const OpSpec spec;
};
const OpSpec Linear::spec{
    "linear",
    {{input,
      {weight},
      [](const Ctx& c) { return product(kMm, c.grad(), c[weight], false, false); }},
     {weight, {input}, [](const Ctx& c) { return product(kMm, c.grad(), c[input], true, false); }},
     {bias, {}, [](const Ctx& c) { return c.grad(); }}},
    {AliasKind::kPure, NoAttrs(),
     [](const OpArgs& a) { return linear(a[input], a[weight], a[bias]); }}};
// input_t @ weight^T + input @ weight_t^T + bias_t.
const DeclareJvp linear_jvp{Linear::spec, [](const JvpContext& c) {
                              // Note [Zero tangent terms]
                              const Tensor tx = c.term_tangent(Linear::input);
                              const Tensor tw = c.term_tangent(Linear::weight);
                              const Tensor& tb = c.tangent(Linear::bias);
                              Tensor t;
                              if (tx.defined())
                                add_term(t, linear(tx, c.primal(Linear::weight), Tensor()));
                              if (tw.defined())
                                add_term(t, linear(c.primal(Linear::input), tw, Tensor()));
                              if (tb.defined()) add_term(t, tb);
                              return t;
                            }};

// Note [Batching rules]: input_t is any [..., in] linear takes; weight_t [B, out, in] is a matmul
// batched over the input's leading dims (1s where it has them); bias_t aligns past the batch dim.
const DeclareBatchedJvp linear_batched_jvp{
    Linear::spec, [](const JvpContext& c) {
      const Tensor tx = c.term_tangent(Linear::input);
      const Tensor tw = c.term_tangent(Linear::weight);
      const Tensor& tb = c.tangent(Linear::bias);
      const Tensor& x = c.primal(Linear::input);
      Tensor t;
      if (tx.defined()) add_term(t, linear(tx, c.primal(Linear::weight), Tensor()));
      if (tw.defined()) {
        const Tensor w = x.dim() >= 2 ? align_batched(tw, x.dim()) : tw;
        add_term(t, matmul(x, transpose(w, -1, -2)));
      }
      if (tb.defined()) add_term(t, align_batched(tb, c.result().dim()));
      return t;
    }};

// The broadcast of a's and b's batch dims (all but the last two), as matmul names them.
Shape broadcast_batch(const Tensor& a, const Tensor& b) {
  const Shape x(a.shape().begin(), a.shape().end() - 2), y(b.shape().begin(), b.shape().end() - 2);
  Shape out(std::max(x.size(), y.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t dx = i < out.size() - x.size() ? 1 : x[i - (out.size() - x.size())];
    const int64_t dy = i < out.size() - y.size() ? 1 : y[i - (out.size() - y.size())];
    AG_CHECK(dx == dy || dx == 1 || dy == 1, "matmul: batch dimensions of ", a.describe(), " and ",
             b.describe(), " cannot be broadcast together");
    out[i] = dx == 1 ? dy : dx;
  }
  return out;
}

// The product of all dims but the last `kept`: the row count a reshape to [rows, ...] needs.
// (reshape's -1 cannot be inferred when the kept dims hold no elements.)
int64_t leading_size(const Shape& shape, size_t kept) {
  int64_t rows = 1;
  for (size_t d = 0; d + kept < shape.size(); ++d) rows *= shape[d];
  return rows;
}

// The reshape that ends a folded matmul, as PyTorch's _unsafe_view (and squeeze_): the result is
// not a view of the product, which nothing else holds, so a later write into it is its own, not a
// write through a view that would rebase the product (Note [In-place ops on views]).
Tensor unsafe_view(const Tensor& product, const Shape& shape) {
  Tensor out = reshape(product, shape);
  out.impl()->view_base = Ref<TensorImpl>();
  return out;
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  check_product("mm", a, b, 2);
  return product(kMm, a, b, false, false);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_product("bmm", a, b, 3);
  return product(kBmm, a, b, false, false);
}

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b) {
  check_product("addmm", a, b, 2);
  check_same_dtype_and_device("addmm", bias, a);
  const Shape out = {a.shape()[0], b.shape()[1]};
  check_broadcastable_to("addmm", bias.shape(), out);
  Tensor result;
  if (bias.shape() == Shape{out[1]}) {
    result = backend_for(a.device()).matmul(a, b, false, false, &bias);
  } else {
    Backend& be = backend_for(a.device());
    result = be.binary(BinaryKind::kAdd, be.matmul(a, b, false, false, nullptr), bias, out);
  }
  return record(Addmm::spec, {&bias, &a, &b}, result);
}

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  check_same_dtype_and_device("linear", input, weight);
  // PyTorch: a 1-D weight [in] without bias contracts input's last dim (input @ weight).
  if (weight.dim() == 1 && !bias.defined() && input.dim() >= 1) return matmul(input, weight);
  AG_CHECK(weight.dim() == 2 && input.dim() >= 1 && input.shape().back() == weight.shape()[1],
           "linear: input ", input.describe(), " and weight ", weight.describe(),
           " do not match (expected input [..., in] and weight [out, in])");
  if (bias.defined()) {
    check_same_dtype_and_device("linear", bias, weight);
    AG_CHECK(bias.shape() == Shape{weight.shape()[0]}, "linear: bias ", bias.describe(),
             " does not match weight ", weight.describe());
  }
  if (input.dim() != 2 && bias.defined() && !input.is_contiguous()) {
    // As PyTorch's at::linear, which folds only a contiguous input into one product with the bias
    // (below): the product without it, then the bias added in place (`output.add_(bias)`), so
    // the bias's gradient is the output's very gradient where their shapes agree (a grad()
    // result then is the root's gradient itself: found by fuzz --against pytorch, seed 5802).
    Tensor out = linear(input, weight, Tensor());
    return add_(out, bias);
  }
  if (input.dim() != 2) {  // [..., in] -> [N, in] -> [..., out]
    Shape out_shape = input.shape();
    out_shape.back() = weight.shape()[0];
    const Tensor rows = reshape(input, {leading_size(input.shape(), 1), weight.shape()[1]});
    return unsafe_view(linear(rows, weight, bias), out_shape);
  }
  Tensor out = backend_for(input.device())
                   .matmul(input, weight, false, true, bias.defined() ? &bias : nullptr);
  return record(Linear::spec, {&input, &weight, &bias}, out);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_same_dtype_and_device("matmul", a, b);
  const int64_t da = a.dim(), db = b.dim();
  AG_CHECK(da >= 1 && db >= 1, "matmul: both arguments need at least one dimension, got ",
           a.describe(), " and ", b.describe());
  if (da == 1 && db == 1) {
    AG_CHECK(a.numel() == b.numel(), "matmul: vectors ", a.describe(), " and ", b.describe(),
             " have different lengths");
    return sum(mul(a, b));
  }
  // Checked here, so that the error names matmul and the caller's shapes, not a folded product.
  const int64_t k = a.shape()[da - 1], kb = b.shape()[db == 1 ? 0 : db - 2];
  AG_CHECK(k == kb, "matmul: shapes ", to_string(a.shape()), " and ", to_string(b.shape()),
           " cannot be multiplied (", k, " vs ", kb, ")");
  if (da == 1) {  // [k] @ [..., k, m]: a row vector, then drop that row dim
    Tensor r = matmul(reshape(a, {1, k}), b);
    Shape out = r.shape();
    out.erase(out.end() - 2);
    return unsafe_view(r, out);
  }
  if (db == 1) {
    Shape out = a.shape();
    out.pop_back();
    return unsafe_view(matmul(a, reshape(b, {k, 1})), out);
  }
  if (da == 2 && db == 2) return mm(a, b);
  if (db == 2) {  // [..., n, k] @ [k, m]: fold the batch into rows
    Shape out = a.shape();
    out.back() = b.shape()[1];
    return unsafe_view(mm(reshape(a, {leading_size(a.shape(), 1), k}), b), out);
  }
  // Batched: the batch dims broadcast (PyTorch semantics), then one bmm over the flattened batch.
  // As PyTorch's, an operand broadcast to the batch is an expand: a view, so what bmm saves of it
  // shares its version counter, and a later write into the operand fails backward's check.
  const int64_t n = a.shape()[da - 2], m = b.shape()[db - 1];
  Shape batch = broadcast_batch(a, b);
  auto batched = [&](const Tensor& t, int64_t rows, int64_t cols) {
    Shape full = batch;
    full.push_back(rows);
    full.push_back(cols);
    return reshape(t.shape() == full ? t : expand(t, full), {numel(batch), rows, cols});
  };
  Shape out = batch;
  out.push_back(n);
  out.push_back(m);
  return unsafe_view(bmm(batched(a, n, k), batched(b, k, m)), out);
}

}  // namespace ag::ops
