#pragma once

// Batching rules: an op's tangents at a batched level (Note [Batched tangents],
// engine/forward_ad.h), declared beside the op's jvp rule.

#include <cstdint>
#include <map>
#include <string>

#include "ops/jvp.h"
#include "ops/ops.h"

namespace ag::ops {

// Note [Batching rules]
// At a batched level every tangent has a leading batch dim B (Note [Batched tangents]), and an
// op's result needs the B tangents of its rows: row b is the op's jvp rule on row b of each
// input's tangent. A batching rule computes all B at once from the batched tangents (the rule's
// JvpContext has batch() = B, and tangent() / term_tangent() / tangent_or_zeros() give
// [B, *input shape]), returning [B, *result shape] or something that broadcasts to it once
// aligned past the batch dim (align_batched). It is an optimization beside the jvp rule, declared
// next to it,
//
//   const DeclareBatchedJvp reshape_batched_jvp{Reshape::spec, batched_as_reshape};
//
// and must equal the rule run row by row, which //proptests/ops:batched_jacobian_prop_test checks
// for the whole op list. jvp_from_formulas batches by itself (its formulas see the primals and
// the tangent broadcast to [B, *result shape]). An op with no batching rule takes the per-row
// fallback: its jvp rule run B times on rows, then stacked; each use counts in
// batched_jvp_fallbacks(), so a test can see that a function takes batching rules only. Every
// op of the op list (ops/op_list.h) and every op its gradients record (softmax_backward,
// select_backward, view_scatter, ...) has a batching rule or jvp_from_formulas, so jacfwd and
// hessian run no op row by row; the fallback is there for an op declared with a jvp rule alone.
Tensor batched_jvp(const OpSpec& spec, const JvpContext& c);

// Declares `rule` as `spec`'s batching rule (Note [Batching rules]).
struct DeclareBatchedJvp {
  DeclareBatchedJvp(const OpSpec& spec, JvpFn rule) { spec.declare_batched_jvp(rule); }
};

// [B, *s] as [B, 1, ..., 1, *s] of rank 1 + `rank` (a view), so that it broadcasts against a
// tensor of rank `rank` as a row of shape s does.
Tensor align_batched(const Tensor& t, int64_t rank);

// Batching rules several ops share: the result's tangent is the input's reshaped to the result's
// shape (ops that keep the row-major order: reshape, view, squeeze, unsqueeze), or broadcast to it
// (expand, broadcast_to).
Tensor batched_as_reshape(const JvpContext& c);
Tensor batched_as_broadcast(const JvpContext& c);
// A sum of the input over the dims where `kept` (the input's rank) has 1, reshaped to the
// result: sum, sum_dim, sum_to; scaled by result / input numel for the means.
Tensor batched_sum_to_result(const JvpContext& c, const Shape& kept, bool mean);

// Note [Batched dims]
// A row's dim d is the batched tangent's dim d + 1, so a rule of an op along a dim (softmax,
// cumsum, gather) runs the op at dim + 1 (the op's attributes hold dims normalized against the
// row). The ops see a 0-dim row as [1] (Note [Dims of a 0-dim tensor]), where dim 0 has no dim 1
// behind the batch dim: batched_at_least_1d views such a row's tangent [B] as [B, 1], and the
// rule returns its value at the batched result's shape (batched_result). Values of the row (the
// result, a primal) that a recorded op takes beside a batched tangent are expanded to it
// (expanded_row), as batched_from_formulas expands its slots: no op then sees two shapes where
// its row saw one.

// [B, *s] as [B, 1] where s is a 0-dim row's shape, else as it is (Note [Batched dims]).
Tensor batched_at_least_1d(const Tensor& t);  // undefined stays undefined
// The row's value `p` broadcast to [B, *at_least_1d(p's shape)] (a view).
Tensor expanded_row(const Tensor& p, int64_t batch);
// `t` (all B rows' values, in any shape of as many elements) at [B, *result shape]; undefined
// stays undefined.
Tensor batched_result(const JvpContext& c, const Tensor& t);
// A row's index (gather's, max/min's indices) repeated for each of B rows: [B, *index shape],
// at least 1-d past the batch dim.
Index batched_index(const Index& index, int64_t batch);

// How often this thread's batched levels ran each op's jvp rule row by row, by op name.
std::map<std::string, int64_t>& batched_jvp_fallbacks();

}  // namespace ag::ops
