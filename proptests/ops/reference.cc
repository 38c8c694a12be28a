#include "proptests/ops/reference.h"

#include <algorithm>
#include <cmath>

#include "ops/counter_rng.h"

namespace ag::proptests {
namespace {

// Multi-index <-> flat index, row-major.
std::vector<int64_t> unravel(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = flat % s[d];
    flat /= s[d];
  }
  return idx;
}
int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t flat = 0;
  for (size_t d = 0; d < s.size(); ++d) flat = flat * s[d] + idx[d];
  return flat;
}
// The element of a tensor of shape `s` that broadcasting reads at index `idx` of a larger shape.
int64_t broadcast_source(const std::vector<int64_t>& idx, const Shape& s) {
  std::vector<int64_t> own(s.size());
  const size_t off = idx.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) own[d] = s[d] == 1 ? 0 : idx[off + d];
  return ravel(own, s);
}

Shape broadcast_shape(const Shape& x, const Shape& y) {
  Shape out(std::max(x.size(), y.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t dx = i < x.size() ? x[x.size() - 1 - i] : 1;
    const int64_t dy = i < y.size() ? y[y.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = std::max(dx, dy);
  }
  return out;
}

template <typename F>
RTensor binary(const RTensor& a, const RTensor& b, F f) {
  RTensor out{broadcast_shape(a.shape, b.shape), {}};
  for (int64_t i = 0; i < numel(out.shape); ++i) {
    auto idx = unravel(i, out.shape);
    out.v.push_back(f(a.v[broadcast_source(idx, a.shape)], b.v[broadcast_source(idx, b.shape)]));
  }
  return out;
}

template <typename F>
RTensor unary(const RTensor& a, F f) {
  RTensor out{a.shape, {}};
  for (double x : a.v) out.v.push_back(f(x));
  return out;
}

// Sums `a` into `shape` (each element goes to the element broadcasting would read it from).
RTensor sum_to(const RTensor& a, const Shape& shape) {
  RTensor out{shape, std::vector<double>(numel(shape), 0.0)};
  for (int64_t i = 0; i < numel(a.shape); ++i) {
    out.v[broadcast_source(unravel(i, a.shape), shape)] += a.v[i];
  }
  return out;
}

RTensor broadcast_to(const RTensor& a, const Shape& shape) {
  RTensor out{shape, {}};
  for (int64_t i = 0; i < numel(shape); ++i) {
    out.v.push_back(a.v[broadcast_source(unravel(i, shape), a.shape)]);
  }
  return out;
}

RTensor sum_dim(const RTensor& a, int64_t dim, bool keepdim) {
  const int64_t nd = static_cast<int64_t>(a.shape.size());
  if (dim < 0) dim += nd;
  Shape kept = a.shape;
  kept[dim] = 1;
  RTensor out = sum_to(a, kept);
  if (!keepdim) out.shape.erase(out.shape.begin() + dim);
  return out;
}

RTensor transpose(const RTensor& a, int64_t d0, int64_t d1) {
  Shape shape = a.shape;
  std::swap(shape[d0], shape[d1]);
  RTensor out{shape, {}};
  for (int64_t i = 0; i < numel(shape); ++i) {
    auto idx = unravel(i, shape);
    std::swap(idx[d0], idx[d1]);
    out.v.push_back(a.v[ravel(idx, a.shape)]);
  }
  return out;
}

// PyTorch's matmul: 1-D operands get a temporary dim, batch dims broadcast.
RTensor matmul(RTensor a, RTensor b) {
  const bool a_vec = a.shape.size() == 1, b_vec = b.shape.size() == 1;
  if (a_vec) a.shape.insert(a.shape.begin(), 1);
  if (b_vec) b.shape.push_back(1);
  const int64_t n = a.shape[a.shape.size() - 2], k = a.shape.back(), m = b.shape.back();
  const Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  Shape shape = broadcast_shape(ba, bb);
  const Shape batch = shape;
  shape.push_back(n);
  shape.push_back(m);
  RTensor out{shape, std::vector<double>(numel(shape), 0.0)};
  for (int64_t i = 0; i < numel(shape); ++i) {
    auto idx = unravel(i, shape);
    const std::vector<int64_t> bidx(idx.begin(), idx.end() - 2);
    const int64_t r = idx[idx.size() - 2], c = idx.back();
    const int64_t a0 = broadcast_source(bidx, ba) * n * k, b0 = broadcast_source(bidx, bb) * k * m;
    for (int64_t j = 0; j < k; ++j) out.v[i] += a.v[a0 + r * k + j] * b.v[b0 + j * m + c];
  }
  if (a_vec) out.shape.erase(out.shape.end() - 2);
  if (b_vec) out.shape.pop_back();
  return out;
}

RTensor log_softmax(const RTensor& a, int64_t dim) {
  RTensor out = a;
  const int64_t len = a.shape[dim];
  for (int64_t i = 0; i < numel(a.shape); ++i) {
    auto idx = unravel(i, a.shape);
    double mx = -INFINITY, total = 0;
    for (int64_t j = 0; j < len; ++j) {
      idx[dim] = j;
      mx = std::max(mx, a.v[ravel(idx, a.shape)]);
    }
    for (int64_t j = 0; j < len; ++j) {
      idx[dim] = j;
      total += std::exp(a.v[ravel(idx, a.shape)] - mx);
    }
    out.v[i] = a.v[i] - mx - std::log(total);
  }
  return out;
}

// PyTorch's softmax: exp(x - max) / sum(exp(x - max)) along dim.
RTensor softmax(const RTensor& a, int64_t dim) {
  if (dim < 0) dim += static_cast<int64_t>(a.shape.size());
  RTensor out = log_softmax(a, dim);
  for (double& v : out.v) v = std::exp(v);
  return out;
}

// The running sum along dim (a negative dim counts from the end).
RTensor cumsum(const RTensor& a, int64_t dim) {
  if (dim < 0) dim += static_cast<int64_t>(a.shape.size());
  RTensor out = a;
  for (int64_t i = 0; i < numel(a.shape); ++i) {
    auto idx = unravel(i, a.shape);
    if (idx[dim] > 0) {
      --idx[dim];
      out.v[i] += out.v[ravel(idx, a.shape)];  // row-major: the previous element came first
    }
  }
  return out;
}

// cond != 0 ? a : b, the three broadcast together.
RTensor where(const RTensor& cond, const RTensor& a, const RTensor& b) {
  const Shape shape = broadcast_shape(broadcast_shape(cond.shape, a.shape), b.shape);
  RTensor out{shape, {}};
  for (int64_t i = 0; i < numel(shape); ++i) {
    const auto idx = unravel(i, shape);
    out.v.push_back(cond.v[broadcast_source(idx, cond.shape)] != 0
                        ? a.v[broadcast_source(idx, a.shape)]
                        : b.v[broadcast_source(idx, b.shape)]);
  }
  return out;
}

// gather (PyTorch's definition): out[i] = a at i with its dim coordinate replaced by index[i].
RTensor gather(const RTensor& a, int64_t dim, const Shape& shape,
               const std::vector<int64_t>& index) {
  RTensor out{shape, {}};
  for (int64_t i = 0; i < numel(shape); ++i) {
    auto idx = unravel(i, shape);
    idx[dim] = index[i];
    out.v.push_back(a.v[ravel(idx, a.shape)]);
  }
  return out;
}

// scatter_add: a, with src[i] added at i with its dim coordinate replaced by index[i].
RTensor scatter_add(const RTensor& a, int64_t dim, const Shape& shape,
                    const std::vector<int64_t>& index, const RTensor& src) {
  RTensor out = a;
  for (int64_t i = 0; i < numel(shape); ++i) {
    auto idx = unravel(i, shape);
    const double v = src.v[ravel(idx, src.shape)];
    idx[dim] = index[i];
    out.v[ravel(idx, a.shape)] += v;
  }
  return out;
}

// index_select: the slices index[0], index[1], ... of a along dim.
RTensor index_select(const RTensor& a, int64_t dim, const std::vector<int64_t>& index) {
  Shape shape = a.shape;
  shape[dim] = static_cast<int64_t>(index.size());
  RTensor out{shape, {}};
  for (int64_t i = 0; i < numel(shape); ++i) {
    auto idx = unravel(i, shape);
    idx[dim] = index[idx[dim]];
    out.v.push_back(a.v[ravel(idx, a.shape)]);
  }
  return out;
}

// The largest (smallest) element along dim (no NaN among the generated values).
RTensor extreme(const RTensor& a, int64_t dim, bool keepdim, bool largest) {
  Shape kept = a.shape;
  kept[dim] = 1;
  RTensor out{kept, std::vector<double>(numel(kept), largest ? -INFINITY : INFINITY)};
  for (int64_t i = 0; i < numel(a.shape); ++i) {
    auto idx = unravel(i, a.shape);
    idx[dim] = 0;
    double& o = out.v[ravel(idx, kept)];
    o = largest ? std::max(o, a.v[i]) : std::min(o, a.v[i]);
  }
  if (!keepdim) out.shape.erase(out.shape.begin() + dim);
  return out;
}

// The tensors side by side along dim (sizes equal elsewhere).
RTensor cat(const std::vector<RTensor>& x, int64_t dim) {
  Shape shape = x[0].shape;
  shape[dim] = 0;
  for (const RTensor& t : x) shape[dim] += t.shape[dim];
  RTensor out{shape, {}};
  for (int64_t i = 0; i < numel(shape); ++i) {
    auto idx = unravel(i, shape);
    size_t k = 0;
    while (idx[dim] >= x[k].shape[dim]) idx[dim] -= x[k++].shape[dim];
    out.v.push_back(x[k].v[ravel(idx, x[k].shape)]);
  }
  return out;
}

RTensor nll_loss(const RTensor& lp, const std::vector<int64_t>& targets) {
  double total = 0;
  for (size_t i = 0; i < targets.size(); ++i) total -= lp.v[i * lp.shape[1] + targets[i]];
  return {{}, {total / static_cast<double>(targets.size())}};
}

// Element i of the mask is kept (scaled by 1/(1-p)) iff its counter-based uniform is below 1-p.
// dropout2d draws one number per (sample, channel).
RTensor dropout(const RTensor& a, double p, uint64_t seed, bool per_channel) {
  const double keep = 1.0 - p;
  RTensor out = a;
  for (int64_t i = 0; i < numel(a.shape); ++i) {
    int64_t draw = i;
    if (per_channel) {
      auto idx = unravel(i, a.shape);
      draw = idx[0] * a.shape[1] + idx[1];
    }
    const bool kept = ops::uniform_from_counter(seed, static_cast<uint64_t>(draw)) < keep;
    out.v[i] = kept ? a.v[i] * (1.0 / keep) : 0.0;
  }
  return out;
}

}  // namespace

RTensor to_reference(const Tensor& t) { return {t.shape(), t.to_vector()}; }

RTensor reference(const Instr& in, const std::vector<RTensor>& x) {
  const double s = in.scalar;
  switch (in.op) {
    case Op::kLeaf:
      return x[0];
    case Op::kAdd:
      return binary(x[0], x[1], [](double a, double b) { return a + b; });
    case Op::kSub:
      return binary(x[0], x[1], [](double a, double b) { return a - b; });
    case Op::kMul:
      return binary(x[0], x[1], [](double a, double b) { return a * b; });
    case Op::kDiv:
      return binary(x[0], x[1], [](double a, double b) { return a / b; });
    case Op::kPow:
      return binary(x[0], x[1], [](double a, double b) { return std::pow(a, b); });
    case Op::kAddScalar:
      return unary(x[0], [s](double a) { return a + s; });
    case Op::kMulScalar:
      return unary(x[0], [s](double a) { return a * s; });
    case Op::kPowScalar:
      return unary(x[0], [s](double a) { return std::pow(a, s); });
    case Op::kSum:
      return sum_to(x[0], {});
    case Op::kSumDim:
      return sum_dim(x[0], in.dim0, in.keepdim);
    case Op::kMean: {
      RTensor out = sum_to(x[0], {});
      out.v[0] /= static_cast<double>(x[0].v.size());
      return out;
    }
    case Op::kMeanDim: {
      const int64_t nd = static_cast<int64_t>(x[0].shape.size());
      const double n = static_cast<double>(x[0].shape[in.dim0 < 0 ? in.dim0 + nd : in.dim0]);
      return unary(sum_dim(x[0], in.dim0, in.keepdim), [n](double a) { return a / n; });
    }
    case Op::kSumTo:
      return sum_to(x[0], in.shape);
    case Op::kBroadcastTo:
      return broadcast_to(x[0], in.shape);
    case Op::kReshape: {
      RTensor out = x[0];
      int64_t known = 1;
      for (int64_t d : in.shape) known *= d == -1 ? 1 : d;
      out.shape = in.shape;
      for (int64_t& d : out.shape) d = d == -1 ? numel(x[0].shape) / known : d;
      return out;
    }
    case Op::kTranspose:
      return transpose(x[0], in.dim0, in.dim1);
    case Op::kMm:
    case Op::kBmm:
    case Op::kMatmul:
      return matmul(x[0], x[1]);
    case Op::kAddmm: {
      RTensor prod = matmul(x[1], x[2]);
      return binary(prod, x[0], [](double a, double b) { return a + b; });
    }
    case Op::kLinear: {
      RTensor out = matmul(x[0], transpose(x[1], 0, 1));
      if (x.size() > 2) out = binary(out, x[2], [](double a, double b) { return a + b; });
      return out;
    }
    case Op::kLogSoftmax:
      return log_softmax(x[0], in.dim0);
    case Op::kNllLoss:
      return nll_loss(x[0], in.targets);
    case Op::kCrossEntropy:
      return nll_loss(log_softmax(x[0], 1), in.targets);
    case Op::kDropout:
      return dropout(x[0], s, in.seed, false);
    case Op::kDropout2d:
      return dropout(x[0], s, in.seed, true);
    case Op::kClone:
      return x[0];
    case Op::kMaximum:  // no NaN among the generated values
      return binary(x[0], x[1], [](double a, double b) { return std::max(a, b); });
    case Op::kMinimum:
      return binary(x[0], x[1], [](double a, double b) { return std::min(a, b); });
    case Op::kGt:
      return binary(x[0], x[1], [](double a, double b) { return a > b ? 1.0 : 0.0; });
    case Op::kClamp:
      return unary(x[0], [&in](double a) { return std::min(std::max(a, in.scalar), in.max); });
    case Op::kClampMin:
      return unary(x[0], [s](double a) { return std::max(a, s); });
    case Op::kClampMax:
      return unary(x[0], [s](double a) { return std::min(a, s); });
    case Op::kWhere:
      return where(x[0], x[1], x[2]);
    case Op::kMaskedFill:
      return where(x[1], RTensor{{}, {s}}, x[0]);
    case Op::kSoftmax:
      return softmax(x[0], in.dim0);
    case Op::kCumsum:
      return cumsum(x[0], in.dim0);
    case Op::kIndexSelect:
      return index_select(x[0], in.dim0, in.targets);
    case Op::kGather:
      return gather(x[0], in.dim0, in.shape, in.targets);
    case Op::kScatterAdd:
      return scatter_add(x[0], in.dim0, in.shape, in.targets, x[1]);
    case Op::kCat:
      return cat(x, in.dim0);
    case Op::kStack: {  // cat of the tensors with a new dim of size 1
      std::vector<RTensor> parts = x;
      for (RTensor& t : parts) t.shape.insert(t.shape.begin() + in.dim0, 1);
      return cat(parts, in.dim0);
    }
    case Op::kMaxDim:
    case Op::kMinDim:
      return extreme(x[0], in.dim0, in.keepdim, in.op == Op::kMaxDim);
    default:
      // An elementwise unary op: its row's value (Note [Op traits], proptests/op_traits.h).
      if (traits(op_id(in.op)).unary_elementwise()) {
        return unary(x[0], traits(op_id(in.op)).d[0]);
      }
      break;  // not generated (the traits table's kComposition column)
  }
  return {};
}

}  // namespace ag::proptests
