#pragma once

// The op set as one list: the elementwise kernels of Note [The op list] (ops/kinds.h) and every
// other op of ops/ops.h. Plain macros and constexpr tables with no dependencies, so that the
// proptest generators (and the API model, which must not depend on the engine) take their op
// enumerations and names from here (Note [Op traits], proptests/op_traits.h).

#include "ops/kinds.h"

// The ops of ops/ops.h that are not one elementwise kernel, as X(Name, "name", -): the same
// shape as AG_BINARY_OPS and AG_UNARY_OPS, with no scalar rule. The names are those of the
// ops' derivative specs where they have one, and of the conformance corpus' text form
// (proptests/conformance/program.h); factories are left out (they make leaves, not ops on
// tensors).
// clang-format off
#define AG_TENSOR_OPS(X)                 \
  X(Sum, "sum", -)                       \
  X(SumDim, "sum_dim", -)                \
  X(Mean, "mean", -)                     \
  X(MeanDim, "mean_dim", -)              \
  X(SumTo, "sum_to", -)                  \
  X(BroadcastTo, "broadcast_to", -)      \
  X(Reshape, "reshape", -)               \
  X(View, "view", -)                     \
  X(Transpose, "transpose", -)           \
  X(T, "t", -)                           \
  X(Permute, "permute", -)               \
  X(Expand, "expand", -)                 \
  X(Unsqueeze, "unsqueeze", -)           \
  X(Squeeze, "squeeze", -)               \
  X(Select, "select", -)                 \
  X(Narrow, "narrow", -)                 \
  X(Slice, "slice", -)                   \
  X(Diagonal, "diagonal", -)             \
  X(Unfold, "unfold", -)                 \
  X(AsStrided, "as_strided", -)          \
  X(Alias, "alias", -)                   \
  X(Split, "split", -)                   \
  X(Chunk, "chunk", -)                   \
  X(Unbind, "unbind", -)                 \
  X(Contiguous, "contiguous", -)         \
  X(Detach, "detach", -)                 \
  X(Clone, "clone", -)                   \
  X(To, "to", -)                         \
  X(ZerosLike, "zeros_like", -)          \
  X(OnesLike, "ones_like", -)            \
  X(Clamp, "clamp", -)                   \
  X(Where, "where", -)                   \
  X(MaskedFill, "masked_fill", -)        \
  X(Softmax, "softmax", -)               \
  X(Cumsum, "cumsum", -)                 \
  X(IndexSelect, "index_select", -)      \
  X(Gather, "gather", -)                 \
  X(ScatterAdd, "scatter_add", -)        \
  X(MaxDim, "max_dim", -)                \
  X(MinDim, "min_dim", -)                \
  X(Cat, "cat", -)                       \
  X(Stack, "stack", -)                   \
  X(Mm, "mm", -)                         \
  X(Addmm, "addmm", -)                   \
  X(Linear, "linear", -)                 \
  X(Bmm, "bmm", -)                       \
  X(Matmul, "matmul", -)                 \
  X(LogSoftmax, "log_softmax", -)        \
  X(NllLoss, "nll_loss", -)              \
  X(CrossEntropy, "cross_entropy", -)    \
  X(Dropout, "dropout", -)               \
  X(Dropout2d, "dropout2d", -)           \
  X(AddInplace, "add_", -)               \
  X(MulInplace, "mul_", -)               \
  X(CopyInplace, "copy_", -)

// The whole op set, X(Name, "name", rule or -).
#define AG_OPS(X) AG_BINARY_OPS(X) AG_UNARY_OPS(X) AG_TENSOR_OPS(X)
// clang-format on

namespace ag::ops {

// One enumerator per op of the list, in its order.
#define AG_OP_ENUMERATOR(Name, name, rule) k##Name,
enum class OpId { AG_OPS(AG_OP_ENUMERATOR) };
#undef AG_OP_ENUMERATOR

#define AG_OP_ID(Name, name, rule) OpId::k##Name,
inline constexpr OpId kAllOps[] = {AG_OPS(AG_OP_ID)};
#undef AG_OP_ID
inline constexpr int kNumOps = sizeof(kAllOps) / sizeof(kAllOps[0]);

// The op's name in the list ("add", "sum_dim", "add_").
#define AG_OP_NAME(Name, name, rule) name,
inline constexpr const char* kOpNames[] = {AG_OPS(AG_OP_NAME)};
#undef AG_OP_NAME
constexpr const char* op_name(OpId op) { return kOpNames[static_cast<int>(op)]; }

// The op named `name`; false when the list has none.
constexpr bool op_named(const char* name, OpId* op) {
  for (int i = 0; i < kNumOps; ++i) {
    const char* a = kOpNames[i];
    const char* b = name;
    while (*a != '\0' && *a == *b) ++a, ++b;
    if (*a == *b) {
      *op = kAllOps[i];
      return true;
    }
  }
  return false;
}

}  // namespace ag::ops
