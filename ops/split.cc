// split, chunk and unbind: several views of one input, recorded as one node (Note [Several views,
// one node]).
#include <algorithm>
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
#include "ops/ops.h"
#include "ops/views.h"

namespace ag::ops {

// Note [Several views, one node]
// split, chunk and unbind return views of their input: narrows along `dim` (split, chunk) or
// selects (unbind), each with its layout over the root base (Note [Views of any stride],
// ops/views.h) and, under forward-mode AD, the narrow or select of the input's tangent (Note
// [Forward mode]). As PyTorch's, their history is one node with an output per view (PyTorch's
// SplitBackward0, SplitWithSizesBackward0 for chunk of an empty dim, UnbindBackward0; named
// here after the op, as every node): `o.grad_fn` is the same node for every output, `output_nr`
// its position. When any output gets a gradient the node runs, so its other outputs' tensor
// hooks are handed None (Note [Hooks], engine/hooks.h), and its backward assembles the input's
// gradient from every output's, zeros for those that got none: a cat (split) or stack (unbind)
// of them, recorded under create_graph as any op, so differentiable again. The views are made
// by narrow and select with grad mode off (traced and given tangents as those ops are, no node
// of their own), then take the node; made with grad mode on, they are kMultiOutputNode (Note
// [How a view was made]): one output's write cannot rewrite the node that made them all.

namespace {

class SplitNode final : public Node {
 public:
  SplitNode(const Tensor& input, int64_t dim, bool stacked, const char* name)
      : Node({&input}), dim_(dim), stacked_(stacked), name_(name) {}

  TensorList apply(TensorList&& grads, const Call& call) override {
    TensorList out(1);
    if (!call.needs_input_grad(0)) return out;  // Note [Per-call view]
    TensorList parts;
    parts.reserve(grads.size());
    for (size_t k = 0; k < grads.size(); ++k) {
      const TensorMeta& meta = input_metadata()[k];
      parts.push_back(grads[k].defined() ? std::move(grads[k])
                                         : zeros(meta.shape, meta.dtype, meta.device));
    }
    out[0] = stacked_ ? stack(parts, dim_) : cat(parts, dim_);
    return out;
  }
  std::string name() const override { return name_; }

 private:
  int64_t dim_;
  bool stacked_;  // unbind: the outputs' gradients are stacked along dim_
  const char* name_;
};

// Gives `views` of `a` (made with grad mode off) their kind and, when grad mode is on and `a`
// requires grad, the one node `name` whose outputs they are.
std::vector<Tensor> as_outputs_of_one_node(std::vector<Tensor> views, const Tensor& a, int64_t dim,
                                           bool stacked, const char* name) {
  mark_multi_output_views(views);
  if (!grad_enabled() || !a.requires_grad() || views.empty()) return views;
  auto node = std::make_shared<SplitNode>(a, dim, stacked, name);
  for (const Tensor& v : views) {
    const uint32_t nr = node->add_input_metadata(TensorMeta::of(v));
    TensorImpl& impl = *v.impl();
    impl.set_requires_grad(true);
    impl.grad_fn = node;
    impl.output_nr = nr;
  }
  return views;
}

// Under forward-mode AD the views' tangents are the same split of the input's tangent, made with
// grad mode as the caller has it: PyTorch's formula (`self_t.split(...)`) records a node when the
// tangent requires grad, where the narrows and selects made them with grad mode off, as leaves.
template <typename SplitAgain>
std::vector<Tensor> with_recorded_tangents(std::vector<Tensor> views, const Tensor& a,
                                           const char* name, SplitAgain split_again) {
  if (!forward_ad::live() || !grad_enabled()) return views;
  for (int level = 0; level < forward_ad::num_levels(); ++level) {
    if (forward_ad::suspended(level)) continue;
    const Tensor t = forward_ad::tangent(a, level);
    if (!t.defined() || !t.requires_grad()) continue;
    forward_ad::SuspendLevel rule_reads_primals(level);  // Note [Forward mode]
    // Note [Batched tangents]: split after the batch dim.
    const std::vector<Tensor> pieces = split_again(t, forward_ad::batch_size(level) > 0 ? 1 : 0);
    for (size_t i = 0; i < views.size(); ++i) {
      forward_ad::set_tangent(views[i], level, pieces.at(i), name);
    }
  }
  return views;
}

}  // namespace

std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim) {
  check_defined("split", a, "input");
  AG_CHECK(a.dim() > 0, "split: cannot be applied to a 0-dim tensor");
  dim = normalize_dim("split", dim, a);
  const int64_t size = a.shape()[dim];
  AG_CHECK(split_size > 0 || (split_size == 0 && size == 0),
           "split: split_size can only be 0 if "
           "dimension size is 0, but got split_size ",
           split_size, " for ", a.describe());
  const int64_t pieces =
      split_size == 0 ? 1 : std::max<int64_t>((size + split_size - 1) / split_size, 1);
  std::vector<Tensor> out;
  {
    NoGradGuard views_only;
    for (int64_t i = 0; i < pieces; ++i) {
      const int64_t start = i * split_size;
      out.push_back(narrow(a, dim, start, std::min(split_size, size - start)));
    }
  }
  return with_recorded_tangents(
      as_outputs_of_one_node(std::move(out), a, dim, /*stacked=*/false, "split"), a, "split",
      [&](const Tensor& t, int64_t shift) { return split(t, split_size, dim + shift); });
}

std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim) {
  check_defined("chunk", a, "input");
  AG_CHECK(chunks > 0, "chunk: chunk expects `chunks` to be greater than 0, got: ", chunks);
  AG_CHECK(a.dim() > 0, "chunk: cannot be applied to a 0-dim tensor");
  dim = normalize_dim("chunk", dim, a);
  const int64_t size = a.shape()[dim];
  if (size > 0) return split(a, (size + chunks - 1) / chunks, dim);
  // As PyTorch's chunk: `chunks` empty pieces of an empty dim (split_with_sizes), where split
  // would make one.
  std::vector<Tensor> out;
  {
    NoGradGuard views_only;
    for (int64_t i = 0; i < chunks; ++i) out.push_back(narrow(a, dim, 0, 0));
  }
  return with_recorded_tangents(
      as_outputs_of_one_node(std::move(out), a, dim, /*stacked=*/false, "split_with_sizes"), a,
      "chunk", [&](const Tensor& t, int64_t shift) { return chunk(t, chunks, dim + shift); });
}

std::vector<Tensor> unbind(const Tensor& a, int64_t dim) {
  check_defined("unbind", a, "input");
  AG_CHECK(a.dim() > 0, "unbind: cannot be applied to a 0-dim tensor");
  dim = normalize_dim("unbind", dim, a);
  std::vector<Tensor> out;
  {
    NoGradGuard views_only;
    for (int64_t i = 0; i < a.shape()[dim]; ++i) out.push_back(select(a, dim, i));
  }
  return with_recorded_tangents(
      as_outputs_of_one_node(std::move(out), a, dim, /*stacked=*/true, "unbind"), a, "unbind",
      [&](const Tensor& t, int64_t shift) { return unbind(t, dim + shift); });
}

}  // namespace ag::ops
