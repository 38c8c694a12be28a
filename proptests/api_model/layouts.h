#pragma once

// The API model's strided layouts, written from PyTorch's definitions without the engine's
// (ops/view_layout.h): which element of its storage each element of a tensor reads, what each
// view op makes of a layout, when reshape can be a view, and which in-place writes PyTorch
// refuses because of overlapping memory.
//
// Note [Model layouts]
// A tensor of the model is a layout over a storage: sizes, strides and an offset, as PyTorch's.
// Ops make new storages, laid out as PyTorch lays them out (Note [Model output layouts]); view
// ops make other layouts of the same storage. A tensor's values
// are its storage's elements at positions(layout), in row-major order of its sizes, and an
// in-place write puts its result back at those positions, so every alias sees it. A view's
// history reads its input through an index map: for each of its elements, the element of the
// input it reads (positions of the view op applied to the input's contiguous layout), which is
// all the gradient needs to know.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proptests/api_model/values.h"

namespace ag::proptests {

struct Strided {
  Dims sizes, strides;
  int64_t offset = 0;
  bool operator==(const Strided& o) const {
    return sizes == o.sizes && strides == o.strides && offset == o.offset;
  }
};

Strided contiguous_layout(const Dims& sizes);
// The storage position of each element, row-major.
std::vector<int64_t> positions(const Strided& s);
bool is_contiguous(const Strided& s);  // PyTorch's: size-1 dims' strides do not count

// The view ops the model makes, with PyTorch's arguments.
enum class ViewOp : uint8_t {
  kTranspose,  // dim0, dim1
  kPermute,    // dims...
  kSelect,     // dim, index
  kSlice,      // dim, start, end, step
  kNarrow,     // dim, start, length
  kExpand,     // sizes...
  kUnsqueeze,  // dim
  kSqueeze,    // (no args: every size-1 dim) or dim
  kDiagonal,   // offset, dim1, dim2
  kT,          // none
};
struct ViewCall {
  ViewOp op = ViewOp::kTranspose;
  Dims args;
};

// split(size, dim), chunk(chunks, dim), unbind(dim): several views.
enum class MultiOp : uint8_t { kSplit, kChunk, kUnbind };
struct MultiCall {
  MultiOp op = MultiOp::kSplit;
  int64_t n = 1;  // kSplit: the size; kChunk: the number of chunks
  int64_t dim = 0;
};
// The view calls (narrow or select) that make each output for a tensor of shape `s`; nothing
// when PyTorch raises (a rank-0 tensor, a dim out of range, a size or chunk count below 1).
std::optional<std::vector<ViewCall>> multi_parts(const Dims& s, const MultiCall& call);
// The call as PyTorch code on tensor `x`: "x.split(2, 1)".
std::string multi_text(const std::string& x, const MultiCall& call);

// The layout the view op gives `in`, or the reason PyTorch raises.
struct ViewResult {
  std::optional<Strided> layout;
  std::string error;
};
ViewResult apply_view(const Strided& in, const ViewCall& call);
// The call as PyTorch code on tensor `x`: "x.transpose(0, 1)", "x[:, 1:3:2]"...
std::string view_text(const std::string& x, const ViewCall& call);

// PyTorch's computeStride: the strides of a view of `in` with `sizes`, if one exists.
std::optional<Dims> reshape_strides(const Strided& in, const Dims& sizes);

// Note [Model output layouts]
// PyTorch's elementwise ops (TensorIterator) and clone() do not always make contiguous tensors:
// a transpose times 2 is a transpose again, so a later view of it raises and reshape copies.
// elementwise_strides: for operands of the result's shape only (a 0-d operand, PyTorch's wrapped
// Python scalar, counts as another shape), all contiguous gives contiguous, all dense with equal
// strides gives those strides (the channels-last case needs rank 4, which the model never makes);
// else the dims are ordered, innermost first, by an insertion sort that asks the operands in turn
// (a pair where either operand's stride is 0, a broadcast dim, is skipped; the smaller stride is
// inner; equal strides with the inner dim larger swap, else the next operand is asked), and the
// result is dense in that order. clone (memory_format=preserve) keeps a dense tensor's strides,
// else the dense strides of its own order. Every other op of the model makes contiguous tensors.
// Written from ATen's TensorIterator.cpp (compute_fast_setup_type, reorder_dimensions) and
// TensorFactories' empty_like (infer_dense_strides), apart from ops/output_layout.h.
Dims elementwise_strides(const Dims& sizes, const std::vector<Strided>& operands);
Dims preserve_strides(const Strided& in);

// PyTorch's memory-overlap checks for in-place ops (ATen's MemoryOverlap.cpp).
enum class Overlap { kNo, kFull, kPartial, kTooHard };
bool non_overlapping_and_dense(const Strided& s);
// Whether some element is read twice for certain (a stride 0 over a size above 1).
bool has_internal_overlap(const Strided& s);
// Two layouts over one storage.
Overlap overlap(const Strided& a, const Strided& b);

}  // namespace ag::proptests
