// Note [Output layout of elementwise ops] (ops/output_layout.h).
#include "ops/output_layout.h"

#include <array>
#include <numeric>
#include <utility>

#include "ops/strided_loop.h"

namespace ag::ops {
namespace {

bool same_shapes(const std::vector<Layout>& operands) {
  for (const Layout& l : operands) {
    if (l.sizes != operands[0].sizes) return false;
  }
  return true;
}

// PyTorch's is_contiguous(ChannelsLast) of a 4-D layout: dims C, W, H, N innermost first.
bool is_channels_last(const Layout& l) {
  if (l.sizes.size() != 4) return false;
  int64_t expected = 1;
  for (int d : {1, 3, 2, 0}) {
    if (l.sizes[d] == 1) continue;
    if (l.strides[d] != expected) return false;
    expected *= l.sizes[d];
  }
  return true;
}

Shape channels_last_strides(const Shape& s) { return {s[2] * s[3] * s[1], 1, s[3] * s[1], s[1]}; }

// Rule 1: the strides TensorIterator's fast set-up gives, or false when it does not apply.
bool fast_setup_strides(const std::vector<Layout>& operands, Shape* strides) {
  if (!same_shapes(operands)) return false;
  auto all = [&](auto pred) {
    for (const Layout& l : operands) {
      if (!pred(l)) return false;
    }
    return true;
  };
  const Shape& sizes = operands[0].sizes;
  if (all([](const Layout& l) { return is_contiguous(l); })) {
    *strides = contiguous_strides(sizes);
  } else if (all(is_channels_last)) {
    *strides = channels_last_strides(sizes);
  } else if (all([&](const Layout& l) {
               return is_non_overlapping_and_dense(l) && l.strides == operands.back().strides;
             })) {
    *strides = operands.back().strides;
  } else {
    return false;
  }
  return true;
}

// An operand's strides over the output's dims (TensorIterator::compute_strides): 0 for a dim it
// broadcasts (missing, or of size 1 where the output's is not).
Shape iteration_strides(const Layout& l, const Shape& shape) {
  Shape out(shape.size(), 0);
  const size_t lead = shape.size() - l.sizes.size();
  for (size_t i = 0; i < l.sizes.size(); ++i) {
    const bool broadcast = l.sizes[i] == 1 && shape[lead + i] != 1;
    out[lead + i] = broadcast ? 0 : l.strides[i];
  }
  return out;
}

// PyTorch's should_swap(inner, outer): 1 when `inner` must go outside `outer`, -1 when it stays
// inside, 0 when no operand tells.
int should_swap(const Shape& shape, const IterationStrides& strides, size_t inner, size_t outer) {
  for (size_t k = 0; k < strides.operands; ++k) {
    const int64_t a = strides.at(k, inner), b = strides.at(k, outer);
    if (a == 0 || b == 0) continue;
    if (a < b) return -1;
    if (a > b) return 1;
    if (shape[inner] > shape[outer]) return 1;
  }
  return 0;
}

// reorder_dimensions: sorts `perm`, the dims innermost first, which starts as the row-major order.
// Returns whether any dim moved.
template <typename Perm>
bool sort_dims(const Shape& shape, const IterationStrides& strides, Perm& perm) {
  bool moved = false;
  for (size_t i = 1; i < shape.size(); ++i) {
    size_t d1 = i;
    for (size_t d0 = i; d0-- > 0;) {
      const int c = should_swap(shape, strides, perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
        moved = true;
      } else if (c < 0) {
        break;
      }
    }
  }
  return moved;
}

// Rule 2: the dense strides of the dims sorted by the operands' strides.
Shape sorted_dense_strides(const Shape& shape, const std::vector<Shape>& strides) {
  const size_t n = shape.size();
  std::vector<size_t> perm(n);
  std::iota(perm.rbegin(), perm.rend(), size_t{0});
  sort_dims(shape, {strides.size(), [&](size_t k, size_t d) { return strides[k][d]; }}, perm);
  Shape out(n);
  int64_t next = 1;
  for (size_t d : perm) {
    out[d] = next;
    next *= shape[d];
  }
  return out;
}

}  // namespace

Shape elementwise_output_strides(const Shape& shape, const std::vector<Layout>& operands) {
  if (numel(shape) == 0) return contiguous_strides(shape);
  Shape strides;
  if (fast_setup_strides(operands, &strides)) return strides;
  std::vector<Shape> iteration;
  iteration.reserve(operands.size());
  for (const Layout& l : operands) iteration.push_back(iteration_strides(l, shape));
  return sorted_dense_strides(shape, iteration);
}

bool rule_two_keeps_row_major(const Shape& shape, const IterationStrides& strides) {
  if (shape.size() > kMaxRowMajorCheckRank) return false;
  std::array<size_t, kMaxRowMajorCheckRank> perm;
  std::iota(perm.rend() - static_cast<std::ptrdiff_t>(shape.size()), perm.rend(), size_t{0});
  return !sort_dims(shape, strides, perm);
}

std::vector<size_t> iteration_order(const Shape& shape, const IterationStrides& strides) {
  std::vector<size_t> perm(shape.size());
  std::iota(perm.rbegin(), perm.rend(), size_t{0});
  sort_dims(shape, strides, perm);
  return perm;
}

Shape preserve_format_strides(const Layout& in) {
  if (numel(in.sizes) == 0) return contiguous_strides(in.sizes);
  if (is_non_overlapping_and_dense(in)) return in.strides;
  return sorted_dense_strides(in.sizes, {in.strides});
}

}  // namespace ag::ops
