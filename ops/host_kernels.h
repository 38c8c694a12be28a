#pragma once

// The kernels of the ops that select, scan and index (ops/select.cc, ops/scan.cc): one host
// implementation for every device (Note [Host kernels]).

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/tensor.h"

namespace ag::ops::host {

// Note [Host kernels]
// where, softmax, cumsum and the index ops are not elementwise kinds of the op list (Note [The op
// list], ops/kinds.h), so no device kernel follows from a rule. Each has one plain loop here, over
// contiguous operands of one dtype and device (the ops check and broadcast before they call):
// on the CPU it runs on the tensors' memory; on any other device the operands are staged through
// host memory and the result copied back. Correct on every device that links, fast on the CPU
// only: a device that needs speed gives the op a kernel of its own (a Backend method) and the
// op calls it instead.

// cond != 0 ? a : b, elementwise, over three tensors of one shape.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// exp(a - max) / sum(exp(a - max)) along dim (dim in [0, a.dim())).
Tensor softmax(const Tensor& a, int64_t dim);
// The running sum along dim, from the first element, or from the last when `reverse` (the
// gradient of cumsum).
Tensor cumsum(const Tensor& a, int64_t dim, bool reverse);
// out[i] = a at i's position with its dim coordinate replaced by index[i]; out has the index's
// shape (index_shape, of a's rank; indices checked by the op).
Tensor gather(const Tensor& a, int64_t dim, const Shape& index_shape,
              const std::vector<int64_t>& index);
// A copy of a with src at each position i of the index added into a at i's position with its dim
// coordinate replaced by index[i] (src at least as large as the index in every dim).
Tensor scatter_add(const Tensor& a, int64_t dim, const Shape& index_shape,
                   const std::vector<int64_t>& index, const Tensor& src);
// The tensors side by side along dim (of one dtype and device, equal sizes outside dim).
Tensor cat(const TensorList& tensors, int64_t dim, const Shape& out);
// The largest (or smallest) element along dim, at keepdim shape, and the index of the first
// one along dim; NaN counts as the extreme, as in PyTorch.
std::pair<Tensor, std::vector<int64_t>> extreme(const Tensor& a, int64_t dim, bool largest);

}  // namespace ag::ops::host
