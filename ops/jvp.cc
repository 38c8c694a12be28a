// Jvp rules' machinery (Note [Jvp rules], ops/jvp.h): the three standard rules, and the tangents
// of a result and of an in-place write.
#include "ops/jvp.h"

#include "engine/error.h"
#include "ops/batched_jvp.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace ag::ops {
namespace {

// The rule's value at one level, checked against the result.
Tensor run_rule(const OpSpec& spec, const JvpContext& ctx, int level) {
  AG_CHECK(spec.jvp() != nullptr, spec.name(),
           ": forward-mode AD: the op has no jvp rule (Note [Jvp rules], ops/jvp.h), so a "
           "tangent cannot pass through it");
  forward_ad::SuspendLevel rule_reads_primals(level);  // Note [Forward mode]
  if (__builtin_expect(ctx.batch() > 0, 0)) return batched_jvp(spec, ctx);
  Tensor t = spec.jvp()(ctx);
  if (t.defined() && t.shape() != ctx.result().shape()) t = broadcast_to(t, ctx.result().shape());
  return t;
}

}  // namespace

Tensor JvpContext::tangent_or_zeros(const Input& input) const {
  const Tensor& t = tangent(input);
  if (t.defined()) return t;
  if (batch_ == 0) return zeros_like(primal(input));
  const Tensor& p = primal(input);
  Shape shape = p.shape();
  shape.insert(shape.begin(), batch_);
  return zeros(shape, p.dtype(), p.device());
}

Tensor JvpContext::term_tangent(const Input& input) const {
  const Tensor& t = tangent(input);
  if (t.defined() || !primal(input).defined() || !zero_terms_record()) return t;
  return tangent_or_zeros(input);
}

bool JvpContext::zero_terms_record() const {
  if (!grad_enabled()) return false;
  for (const Tensor* in : inputs_) {
    if (in->defined() && in->requires_grad()) return true;
  }
  return false;
}

Tensor JvpContext::call(const TensorList& args) const {
  AG_CHECK(spec_.forward().call != nullptr, spec_.name(),
           ": forward-mode AD: the op's jvp rule calls its forward, which it has not");
  return spec_.forward().call(OpArgs(args, attrs_));
}

Tensor jvp_from_formulas(const JvpContext& c) {
  const OpSpec& spec = c.spec();
  // The slots the formulas read, by slot number, from the primal values (Note [Derivative spec]).
  std::vector<Tensor> slots(spec.num_slots());
  for (size_t j = 0; j < slots.size(); ++j) {
    const Slot& s = spec.slot(j);
    slots[j] = s.kind == Slot::Kind::kInput    ? c.primal(Input(s.position, s.name))
               : s.kind == Slot::Kind::kResult ? c.result()
                                               : c.forward_value(s.position);
  }
  std::vector<Shape> shapes;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    const Tensor& in = c.primal(Input(static_cast<int>(i), ""));
    shapes.push_back(in.defined() ? in.shape() : Shape());
  }
  Tensor sum;
  for (size_t i = 0; i < spec.num_inputs(); ++i) {
    if (!spec.differentiable(i)) continue;
    const Tensor t = c.term_tangent(Input(static_cast<int>(i), ""));
    if (!t.defined()) continue;
    // A diagonal Jacobian: the gradient formula applied to the tangent is this input's part.
    const BackwardContext ctx(spec, t, i, shapes, c.all_attrs(), slots.data());
    add_term(sum, spec.formula(i)(ctx));
  }
  return sum;
}

void add_term(Tensor& sum, const Tensor& term) { sum = sum.defined() ? add(sum, term) : term; }

Tensor jvp_linear(const JvpContext& c) {
  TensorList args;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    const Input in(static_cast<int>(i), "");
    const Tensor& p = c.primal(in);
    args.push_back(!p.defined() || !c.spec().differentiable(i) ? p : c.tangent_or_zeros(in));
  }
  return c.call(args);
}

Tensor jvp_bilinear(const JvpContext& c) {
  const Input a(0, "a"), b(1, "b");
  const Tensor ta = c.term_tangent(a), tb = c.term_tangent(b);
  Tensor sum;
  if (ta.defined()) sum = c.call({ta, c.primal(b)});
  if (tb.defined()) add_term(sum, c.call({c.primal(a), tb}));
  return sum;
}

namespace {

// Whether `a` and `b` share storage.
bool shares_storage(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.shares_storage_with(b);
}

}  // namespace

void compute_tangents(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                      const Tensor& result, const OpAttrs& attrs,
                      std::initializer_list<Tensor> from_forward) {
  if (!spec.has_derivative()) return;  // detach, the comparisons: a constant
  // A view op's result views its input, and its tangent the input's tangent (jvp_linear).
  bool view_of_input = false;
  for (const Tensor* in : inputs) view_of_input = view_of_input || shares_storage(*in, result);
  forward_ad::for_each_tangent_level(inputs, [&](int level, const TensorList& tangents) {
    const JvpContext ctx(spec, inputs, tangents, result, attrs, from_forward,
                         forward_ad::batch_size(level));
    Tensor t = run_rule(spec, ctx, level);
    if (!t.defined()) return;
    // Any other op's result gets a tangent of its own, as PyTorch's (whose formula computes a new
    // tensor: `self_t + other_t` with a zero tensor for an input without one). A rule may return
    // an input's tangent itself or a view of it (add's formula passes the gradient on, broadcast
    // expands it), which a later in-place write into either tangent would change in both.
    if (!view_of_input) {
      for (const Tensor& in : tangents) {
        if (!shares_storage(in, t)) continue;
        forward_ad::SuspendLevel copy_carries_none(level);
        t = clone(t);
        break;
      }
    }
    // A view op's result is marked a view only after this (make_view_with): its tangent, a
    // view of its input's of any stride, must stay one (found by the API model: an expand's
    // tangent was copied, and missed a later write into its input's tangent).
    forward_ad::set_tangent(result, level, t, spec.name().c_str(), view_of_input);
  });
}

Tensor record_with_tangents(const OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                            Tensor result, OpAttrs attrs,
                            std::initializer_list<Tensor> from_forward) {
  if (!records_node(inputs)) {
    compute_tangents(spec, inputs, result, attrs, from_forward);
    return result;
  }
  OpNode& node = attach_history(make_node(spec, inputs, attrs, from_forward), result);
  compute_tangents(spec, inputs, result, attrs, from_forward);
  save_result(node, result);
  return result;
}

TensorList tangents_of_write(const OpSpec& spec, const Tensor& self, const Tensor& other) {
  TensorList out;
  if (!forward_ad::live()) return out;
  out.resize(forward_ad::num_levels());
  // Named, so that the list's array lives as long as the contexts that keep the list.
  const std::initializer_list<const Tensor*> inputs = {&self, &other};
  forward_ad::for_each_tangent_level(inputs, [&](int level, const TensorList& tangents) {
    // No in-place op's rule reads its result; self stands in for it.
    const OpAttrs attrs = spec.forward().attrs;
    const JvpContext ctx(spec, inputs, tangents, self, attrs, {}, forward_ad::batch_size(level));
    Tensor& t = out[static_cast<size_t>(level)];
    t = run_rule(spec, ctx, level);
    if (!t.defined())
      t = zeros(forward_ad::tangent_shape(self, level), self.dtype(), self.device());
  });
  return out;
}

void finish_tangents_of_write(const Tensor& self, const TensorList& tangents) {
  for (size_t level = 0; level < tangents.size(); ++level) {
    if (!tangents[level].defined()) continue;
    Tensor target = forward_ad::tangent_to_write(self, static_cast<int>(level));
    forward_ad::SuspendLevel writing_the_tangent(static_cast<int>(level));
    copy_(target, tangents[level]);
  }
}

}  // namespace ag::ops
