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
