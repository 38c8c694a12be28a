// cat and stack: one node for any number of inputs (Note [Variadic ops]).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/call.h"
#include "engine/error.h"
#include "engine/forward_ad.h"
#include "engine/grad_mode.h"
#include "engine/node.h"
#include "ops/checks.h"
#include "ops/host_kernels.h"
#include "ops/ops.h"
#include "ops/trace_hook.h"

namespace ag::ops {

// Note [Variadic ops]
// An OpSpec has one formula per input, fixed when the spec is built (Note [Derivative spec],
// ops/spec.h), and cat and stack take any number of tensors. So they record a node of their own,
// JoinNode, with one edge per input and one formula for all of them, join_backward: input i's
// slice of the gradient, a view of it as PyTorch's make them (cat_tensors_backward narrows the
// gradient, stack_tensors_backward selects from it): no copy, and differentiable (the view ops'
// own derivatives), so double backward holds. Joining 1,000 slices backward then costs 1,000
// views, where copying each slice out with index_select took most of the step (issue 44). No
// spec: the JIT neither traces nor runs cat and stack, and refuses them while tracing rather than
// record a constant.

namespace {

// Input i's slice [start, start + len) of the gradient along dim, at the input's shape (stack's
// one element of the stacked dim, which its input does not have).
Tensor join_backward(const Tensor& grad, int64_t dim, int64_t start, int64_t len, bool stack) {
  return stack ? select(grad, dim, start) : narrow(grad, dim, start, len);
}

EdgeList edges_of(const TensorList& inputs) {
  EdgeList edges;
  for (const Tensor& t : inputs) edges.push_back(gradient_edge(t));
  return edges;
}

class JoinNode final : public Node {
 public:
  JoinNode(const TensorList& inputs, int64_t dim, bool stack)
      : Node(edges_of(inputs)), dim_(dim), stack_(stack) {
    for (const Tensor& t : inputs) shapes_.push_back(t.shape());
  }
  TensorList apply(TensorList&& grads, const Call& call) override {
    const Tensor grad = std::move(grads[0]);
    TensorList out(num_outputs());
    int64_t start = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t len = stack_ ? 1 : shapes_[i][dim_];
      if (grad.defined() && call.needs_input_grad(i)) {  // Note [Per-call view]
        out[i] = join_backward(grad, dim_, start, len, stack_);
      }
      start += len;
    }
    return out;
  }
  std::string name() const override { return stack_ ? "stack" : "cat"; }

 private:
  int64_t dim_;
  bool stack_;
  std::vector<Shape> shapes_;
};

// Checks what cat and stack share; `what` names the op.
void check_joinable(const char* op, const TensorList& tensors) {
  AG_CHECK(!tensors.empty(), op, ": expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_defined(op, tensors[i], "tensor");
    if (i > 0) check_same_dtype_and_device(op, tensors[0], tensors[i]);
  }
  AG_CHECK(trace_hook() == nullptr, op,
           ": cannot be traced (Note [Variadic ops]: it has no op spec yet)");
}

// Note [Forward mode]: cat and stack are linear, so out's tangent is the tangents joined alike
// (zeros for an input that carries none).
void join_tangents(const TensorList& tensors, int64_t dim, bool stack, const Tensor& out) {
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : tensors) inputs.push_back(&t);
  forward_ad::for_each_tangent_level(inputs, [&](int level, TensorList tangents) {
    forward_ad::SuspendLevel rule_reads_primals(level);
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (!tangents[i].defined()) {
        const Tensor& t = tensors[i];
        tangents[i] = zeros(forward_ad::tangent_shape(t, level), t.dtype(), t.device());
      }
    }
    // Note [Batched tangents]: the rows join along the dim after the batch dim (dim is >= 0).
    const int64_t d = forward_ad::batch_size(level) > 0 ? dim + 1 : dim;
    forward_ad::set_tangent(out, level, stack ? ops::stack(tangents, d) : cat(tangents, d),
                            stack ? "stack" : "cat");
  });
}

// `out`, made of `tensors` along dim, with its JoinNode when some input requires grad.
Tensor join(const TensorList& tensors, int64_t dim, bool stack, Tensor out) {
  if (forward_ad::live()) join_tangents(tensors, dim, stack, out);
  bool requires = false;
  for (const Tensor& t : tensors) requires = requires || t.requires_grad();
  if (!grad_enabled() || !requires) return out;
  auto node = std::make_shared<JoinNode>(tensors, dim, stack);
  const uint32_t nr = node->add_input_metadata(TensorMeta::of(out));
  out.impl()->set_requires_grad(true);
  out.impl()->grad_fn = std::move(node);
  out.impl()->output_nr = nr;
  return out;
}

}  // namespace

Tensor cat(const TensorList& tensors, int64_t dim) {
  check_joinable("cat", tensors);
  const Tensor& first = tensors[0];
  for (size_t i = 0; i < tensors.size(); ++i) {
    AG_CHECK(tensors[i].dim() > 0, "cat: a 0-dim tensor (at position ", i,
             ") cannot be concatenated");
  }
  dim = normalize_dim("cat", dim, first);
  Shape out = first.shape();
  out[dim] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Shape& s = tensors[i].shape();
    bool fits = s.size() == out.size();
    for (size_t d = 0; fits && d < s.size(); ++d)
      fits = static_cast<int64_t>(d) == dim || s[d] == out[d];
    AG_CHECK(fits, "cat: sizes of tensors must match except in dim ", dim, ": tensor 0 is ",
             to_string(first.shape()), " and tensor ", i, " is ", to_string(s));
    out[dim] += s[dim];
  }
  return join(tensors, dim, false, host::cat(tensors, dim, out));
}

Tensor stack(const TensorList& tensors, int64_t dim) {
  check_joinable("stack", tensors);
  const Shape& shape = tensors[0].shape();
  const int64_t rank = static_cast<int64_t>(shape.size()) + 1;
  AG_CHECK(dim >= -rank && dim < rank, "stack: dim ", dim, " is out of range for tensors of shape ",
           to_string(shape), " (expected a dim in [", -rank, ", ", rank - 1, "])");
  if (dim < 0) dim += rank;
  Shape one = shape;  // each tensor with the new dim, of size 1
  one.insert(one.begin() + dim, 1);
  TensorList parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    AG_CHECK(tensors[i].shape() == shape, "stack: expects each tensor to be equal size, but got ",
             to_string(shape), " at entry 0 and ", to_string(tensors[i].shape()), " at entry ", i);
    parts.push_back(unsqueeze(detach(tensors[i]), dim));  // the same elements; no history
  }
  Shape out = one;
  out[dim] = static_cast<int64_t>(tensors.size());
  return join(tensors, dim, true, host::cat(parts, dim, out));
}

}  // namespace ag::ops
