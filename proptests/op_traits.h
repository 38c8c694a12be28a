#pragma once

// Note [Op traits]
// What the test tree knows of each op of the op list (ops/op_list.h), in one table keyed by
// OpId, one row per op, in the list's order:
//
//   - which generators make it (random DAGs, compositions, conformance programs, the API model,
//     the JIT's random programs and random IR graphs) and how, or why the others do not;
//   - its PyTorch spelling, as the rendered PyTorch scripts write it;
//   - whether it is made of other ops of the list (it reports those to the tracing hook, not
//     itself);
//   - for an elementwise unary op, everything the generators and oracles need to use it with
//     no code of their own: its input domain, what its backward saves, and its value with its
//     first two derivatives as plain float64 functions. The naive references
//     (proptests/ops/reference.cc) compute its values with them, the API model's dual numbers
//     (proptests/api_model/dual.h: taylor()) its first and second derivatives, and every
//     generator draws it from the table (unary_ops()) and calls it by name (proptests/op_call.h).
//
// The table is constexpr and checked at compile time to have one row per op of the list, in
// order: an op added to the list without a row is a compile error here, so no generator or
// oracle silently lacks a new op. Tests check each generator against what the table claims it
// makes (every op it covers is made, no other one): proptests/ops/coverage_test,
// conformance/conformance_test, random_graph_coverage_test, jit/random_program_coverage_test and
// jit/random_ir_graph_coverage_test (the last three watch the ops run through the tracing hook,
// proptests/recorded_ops.h). The API model draws its commands inside its RapidCheck property:
// its unary ops come from this table, and the rest of its column is checked only by reading.
//
// A new elementwise unary op needs only its row here, made by unary():
//
//   unary(OpId::kSin, "torch.sin", Domain::kAny, Saves::kSelf,
//         [](double x) { return std::sin(x); },    // f
//         [](double x) { return std::cos(x); },    // f'
//         [](double x) { return -std::sin(x); }),  // f''
//
// Header-only, with no dependency but the op list: the API model, which must not depend on the
// engine, reads it too.

#include <cmath>

#include "ops/op_list.h"

namespace ag::proptests {

// The generators, as bits of OpTraits::gens.
enum Gen : unsigned {
  kRandomGraph = 1u << 0,  // proptests/random_graph.h: random DAGs of the engine's properties
  kComposition = 1u << 1,  // proptests/ops/composition.h: random compositions of the op set
  kConformance = 1u << 2,  // proptests/conformance/program_gen.h: programs run on both engines
  kApiModel = 1u << 3,     // proptests/api_model: the API state machine's op commands
  kJitProgram = 1u << 4,   // proptests/jit/random_program.h: traced programs
  kIrGraph = 1u << 5,      // proptests/jit/random_ir_graph.h: IR graphs of aten:: nodes
};
inline constexpr unsigned kEveryGenerator = (1u << 6) - 1;
inline constexpr unsigned kNoGenerator = 0;
inline constexpr Gen kAllGens[] = {kRandomGraph, kComposition, kConformance,
                                   kApiModel,    kJitProgram,  kIrGraph};
constexpr const char* gen_name(Gen gen) {
  switch (gen) {
    case kRandomGraph:
      return "random graphs";
    case kComposition:
      return "compositions";
    case kConformance:
      return "conformance programs";
    case kApiModel:
      return "the API model";
    case kJitProgram:
      return "JIT programs";
    case kIrGraph:
      return "IR graphs";
  }
  return "?";
}

// An elementwise unary op's inputs, as every generator must make them.
enum class Domain : unsigned char {
  kAny,       // any finite value
  kPositive,  // positive values (log): each generator feeds it a positive value of its own
  kBounded,   // values of moderate size (exp, which overflows in chains): fed tanh(x)
};

// What an elementwise unary op's backward saves, and so what its derivative reads (PyTorch's
// derivatives.yaml): nothing (a constant derivative), its input, or its result.
enum class Saves : unsigned char { kNothing, kSelf, kResult };

using ScalarFn = double (*)(double);

struct OpTraits {
  ops::OpId op;
  unsigned gens;      // the Gen bits of the generators that make it
  const char* how;    // how they make it, and why the others do not
  const char* torch;  // PyTorch's spelling ("torch.sin", "F.linear", "Tensor.add_")
  bool composite;     // made of other ops of the list: it reports those, not itself
  // An elementwise unary op: the fields below are its own (a plain flag rather than d[0] !=
  // nullptr, which GCC does not evaluate at compile time under -fsanitize=undefined).
  bool unary;
  Domain domain;
  Saves saves;
  // f, its derivative and second derivative, at a point. With Saves::kResult the derivative is
  // read from the result y = f(x) (Note [Derivatives read from the result], api_model/dual.h):
  // d[1] is h with f'(x) = h(f(x)), d[2] is h'.
  ScalarFn d[3];

  constexpr bool unary_elementwise() const { return unary; }
  constexpr bool made_by(Gen gen) const { return (gens & gen) != 0; }
  double f(double x) const { return d[0](x); }
};

namespace op_traits_rows {

using ops::OpId;

// An elementwise unary op: every generator makes it.
constexpr OpTraits unary(OpId op, const char* torch, Domain domain, Saves saves, ScalarFn f,
                         ScalarFn df, ScalarFn d2f) {
  return {op,    kEveryGenerator, "every generator, from this table", torch, false, true, domain,
          saves, {f, df, d2f}};
}
// Any other op: the generators that make it, and how.
constexpr OpTraits op(OpId op, unsigned gens, const char* how, const char* torch,
                      bool composite = false) {
  return {op,
          gens,
          how,
          torch,
          composite,
          false,
          Domain::kAny,
          Saves::kNothing,
          {nullptr, nullptr, nullptr}};
}

constexpr unsigned G = kRandomGraph, C = kComposition, P = kConformance, A = kApiModel,
                   J = kJitProgram, I = kIrGraph;

inline constexpr const char* kDerivativeOnly =
    "an op's derivative: it runs in that op's backward, which every generator reaches";
inline constexpr const char* kViewStatements =
    "a view op with strides: the conformance programs' view statements (also writes through "
    "them); the others make whole-tensor reshapes only. Pinned to PyTorch in "
    "ops/tests/strided_views_test";
inline constexpr const char* kMask =
    "a mask without history (Note [Masks are 0 and 1], ops/select.cc), like gt, which the "
    "compositions make for where and masked_fill";
inline constexpr const char* kNoNewShape =
    "adds no graph shape, alias pattern or autograd rule the other generators lack";

// clang-format off
inline constexpr OpTraits kRows[] = {
    // Binary elementwise ops.
    op(OpId::kAdd, G | C | P | A | J | I, "add of broadcasting operands", "torch.add"),
    op(OpId::kSub, G | C | P | A | J | I, "sub of broadcasting operands", "torch.sub"),
    op(OpId::kMul, G | C | P | A | J | I, "mul of broadcasting operands", "torch.mul"),
    op(OpId::kDiv, G | C | P | A,
       "div by a positive divisor (random graphs: a / (b * b + 1)); the JIT generators' values "
       "may divide by zero", "torch.div"),
    op(OpId::kPow, G | C | P,
       "pow on a positive base ((sigmoid(a) + 0.5) ^ b); undefined on the JIT generators' "
       "values; the API model's rules are mul's and log's", "torch.pow"),
    op(OpId::kThresholdBackward, kNoGenerator, kDerivativeOnly,
       "torch.ops.aten.threshold_backward"),
    op(OpId::kTanhBackward, kNoGenerator, kDerivativeOnly, "torch.ops.aten.tanh_backward"),
    op(OpId::kSigmoidBackward, kNoGenerator, kDerivativeOnly,
       "torch.ops.aten.sigmoid_backward"),
    op(OpId::kMaximum, C | P, "maximum of broadcasting operands, with ties", "torch.maximum"),
    op(OpId::kMinimum, C | P, "minimum of broadcasting operands, with ties", "torch.minimum"),
    op(OpId::kEq, kNoGenerator, kMask, "torch.eq"),
    op(OpId::kGt, C | P,
       "the condition of where and masked_fill (a mask, Note [Masks are 0 and 1], ops/select.cc)",
       "torch.gt"),
    op(OpId::kGe, kNoGenerator, kMask, "torch.ge"),
    // Elementwise unary ops: every generator makes them from their rows.
    unary(OpId::kNeg, "torch.neg", Domain::kAny, Saves::kNothing,
          [](double x) { return -x; },
          [](double) { return -1.0; },
          [](double) { return 0.0; }),
    unary(OpId::kExp, "torch.exp", Domain::kBounded, Saves::kResult,
          [](double x) { return std::exp(x); },
          [](double y) { return y; },  // exp' = exp: the result
          [](double) { return 1.0; }),
    unary(OpId::kLog, "torch.log", Domain::kPositive, Saves::kSelf,
          [](double x) { return std::log(x); },
          [](double x) { return 1.0 / x; },
          [](double x) { return -1.0 / (x * x); }),
    unary(OpId::kTanh, "torch.tanh", Domain::kAny, Saves::kResult,
          [](double x) { return std::tanh(x); },
          [](double y) { return 1.0 - y * y; },
          [](double y) { return -2.0 * y; }),
    unary(OpId::kSigmoid, "torch.sigmoid", Domain::kAny, Saves::kResult,
          [](double x) { return 1.0 / (1.0 + std::exp(-x)); },
          [](double y) { return y * (1.0 - y); },
          [](double y) { return 1.0 - 2.0 * y; }),
    // relu's gradient passes where the result is positive (0 at 0, as threshold_backward).
    unary(OpId::kRelu, "torch.relu", Domain::kAny, Saves::kResult,
          [](double x) { return x > 0 ? x : 0.0; },
          [](double y) { return y > 0 ? 1.0 : 0.0; },
          [](double) { return 0.0; }),
    unary(OpId::kSin, "torch.sin", Domain::kAny, Saves::kSelf,
          [](double x) { return std::sin(x); },
          [](double x) { return std::cos(x); },
          [](double x) { return -std::sin(x); }),
    unary(OpId::kCos, "torch.cos", Domain::kAny, Saves::kSelf,
          [](double x) { return std::cos(x); },
          [](double x) { return -std::sin(x); },
          [](double x) { return -std::cos(x); }),
    // abs'(0) = 0, as PyTorch's sgn.
    unary(OpId::kAbs, "torch.abs", Domain::kAny, Saves::kSelf,
          [](double x) { return std::fabs(x); },
          [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; },
          [](double) { return 0.0; }),
    unary(OpId::kSqrt, "torch.sqrt", Domain::kPositive, Saves::kResult,
          [](double x) { return std::sqrt(x); },
          [](double y) { return 0.5 / y; },  // sqrt'(x) = 1 / (2 sqrt(x)): from the result
          [](double y) { return -0.5 / (y * y); }),
    op(OpId::kSign, kNoGenerator,
       "abs's derivative; a step function, whose finite differences are meaningless at 0",
       "torch.sign"),
    // Elementwise ops with a scalar.
    op(OpId::kAddScalar, G | C | P | A | J,
       "add_scalar by scalars of both signs; the IR graphs' scalar op is mul_scalar",
       "add_scalar"),
    op(OpId::kMulScalar, G | C | P | A | J | I,
       "mul_scalar by scalars of both signs (random graphs: 0.2 * B^T B)", "mul_scalar"),
    op(OpId::kPowScalar, G | C | P | A | J,
       "pow_scalar by 2 and 3 (and 0.5, -1.5 on a positive base); the IR graphs' scalar op is "
       "mul_scalar", "torch.pow"),
    op(OpId::kClampMin, C | P, "clamp_min at a bound inside the leaves' range", "torch.clamp_min"),
    op(OpId::kClampMax, C | P, "clamp_max at a bound inside the leaves' range", "torch.clamp_max"),
    // Reductions and shapes.
    op(OpId::kSum, G | C | P | A | J | I, "sum of the whole tensor", "torch.sum"),
    op(OpId::kSumDim, G | C | P | A | J,
       "sum over one dim, keepdim or not (random graphs: sum_keepdim and linear's bias)",
       "torch.sum"),
    op(OpId::kMean, G | C | P | A, "mean of the whole tensor", "torch.mean", true),
    op(OpId::kMeanDim, C | P | A, "mean over one dim, keepdim or not", "torch.mean", true),
    op(OpId::kSumTo, C | P,
       "sum_to a shape the operand broadcasts from; the others run it in broadcasting ops' "
       "backward", "sum_to"),
    op(OpId::kBroadcastTo, G | C | P,
       "broadcast_to (random graphs: the operands of matmul, linear, log_softmax and "
       "cross_entropy as [2, 3])", "broadcast_to"),
    op(OpId::kReshape, G | C | P | A | J | I,
       "reshape to 1-D and back, to 2-D for the products; the API model's view commands",
       "torch.reshape"),
    op(OpId::kView, P | A,
       "the conformance programs' view statements and the API model's view commands; the same "
       "op as reshape for the others", "Tensor.view", true),
    op(OpId::kTranspose, G | C | P | A | J | I, "transpose of two dims", "transpose"),
    // The view ops with strides (ops/view_ops.cc): tested against PyTorch's values, gradients
    // and errors in ops/tests/strided_views_test; the conformance programs make them, alone, as
    // views of views and as targets of in-place writes.
    op(OpId::kT, P, kViewStatements, "Tensor.t", true),  // records permute
    op(OpId::kPermute, P | J, kViewStatements, "Tensor.permute"),
    op(OpId::kExpand, P | J, kViewStatements, "Tensor.expand"),
    op(OpId::kUnsqueeze, P | J, kViewStatements, "Tensor.unsqueeze"),
    op(OpId::kSqueeze, P, kViewStatements, "Tensor.squeeze"),
    op(OpId::kSelect, P | J, kViewStatements, "Tensor.select"),
    op(OpId::kNarrow, P, kViewStatements, "Tensor.narrow", true),
    op(OpId::kSlice, P | J, kViewStatements, "torch.ops.aten.slice"),
    op(OpId::kDiagonal, P, kViewStatements, "Tensor.diagonal"),
    op(OpId::kUnfold, P, kViewStatements, "Tensor.unfold"),
    op(OpId::kAsStrided, P, kViewStatements, "Tensor.as_strided"),
    op(OpId::kAlias, P, kViewStatements, "torch.ops.aten.alias"),
    op(OpId::kSplit, P, kViewStatements, "Tensor.split", true),
    op(OpId::kChunk, P, kViewStatements, "Tensor.chunk", true),
    op(OpId::kUnbind, P, kViewStatements, "Tensor.unbind", true),
    op(OpId::kContiguous, P, kViewStatements, "Tensor.contiguous", true),
    op(OpId::kDetach, P | A | J | I,
       "detach statements and commands, a view without history; the compositions and random "
       "graphs check gradients, which it has none of", "Tensor.detach"),
    op(OpId::kClone, C | P | A | J, "clone", "torch.clone"),
    op(OpId::kTo, kNoGenerator, "a copy to another device; the generators run on one device",
       "Tensor.to"),
    op(OpId::kZerosLike, kNoGenerator,
       "a constant with no gradient to check; derivative formulas use it", "torch.zeros_like"),
    op(OpId::kOnesLike, kNoGenerator,
       "a constant with no gradient to check; derivative formulas use it", "torch.ones_like"),
    op(OpId::kClamp, C | P, "clamp between bounds inside the leaves' range", "torch.clamp"),
    op(OpId::kWhere, C | P, "where of a comparison of two values, with broadcasting", "torch.where"),
    op(OpId::kMaskedFill, C | P, "masked_fill where a comparison holds", "Tensor.masked_fill"),
    op(OpId::kSoftmax, C | P, "softmax over one dim", "torch.softmax"),
    op(OpId::kCumsum, C | P, "cumsum over one dim", "torch.cumsum"),
    op(OpId::kIndexSelect, C | P, "index_select of repeated indices along one dim",
       "torch.index_select"),
    op(OpId::kGather, C | P, "gather of repeated indices along one dim", "torch.gather"),
    op(OpId::kScatterAdd, C | P, "scatter_add of a fresh src leaf at repeated indices",
       "torch.scatter_add"),
    op(OpId::kMaxDim, C | P, "max along one dim, keepdim or not (its values)", "torch.max"),
    op(OpId::kMinDim, C | P, "min along one dim, keepdim or not (its values)", "torch.min"),
    op(OpId::kCat, C | P, "cat of a value and a unary op of it along one dim", "torch.cat"),
    op(OpId::kStack, C | P, "stack of a value and a unary op of it at one dim", "torch.stack"),
    // Products and losses.
    op(OpId::kMm, G | C | P | A | J, "mm with a weight of fitting shape (random graphs: A @ B^T B)",
       "torch.mm"),
    op(OpId::kAddmm, C | P, "addmm with fresh bias and weight leaves", "torch.addmm"),
    op(OpId::kLinear, G | C | P | A, "linear with and without a bias", "F.linear"),
    op(OpId::kBmm, C | P | A, "bmm of 3-D operands", "torch.bmm"),
    op(OpId::kMatmul, C | P | A, "matmul of 1-D, 2-D and batched operands", "torch.matmul", true),
    op(OpId::kLogSoftmax, G | C | P, "log_softmax over one dim, and before nll_loss",
       "torch.log_softmax"),
    op(OpId::kNllLoss, G | C | P, "nll_loss of log_softmax (random graphs: cross_entropy's)",
       "F.nll_loss"),
    op(OpId::kCrossEntropy, G | C | P, "cross_entropy of 2-D logits", "F.cross_entropy", true),
    op(OpId::kDropout, G | C | P | A,
       "dropout in training mode (the API model: p = 0 or eval mode, an alias)", "F.dropout",
       true),
    op(OpId::kDropout2d, C | P, "dropout2d of 2-D and larger operands", "F.dropout2d", true),
    // In-place ops.
    op(OpId::kAddInplace, P | A | J | I,
       "in-place statements and commands; the compositions and random graphs have no writes",
       "Tensor.add_"),
    op(OpId::kMulInplace, P | A | J | I,
       "in-place statements and commands; the compositions and random graphs have no writes",
       "Tensor.mul_"),
    op(OpId::kCopyInplace, P | A,
       "in-place statements and commands; the JIT generators' writes are add_ and mul_",
       "Tensor.copy_"),
};
// clang-format on

}  // namespace op_traits_rows

// One row per op of the list, in its order.
inline constexpr const auto& kOpTraits = op_traits_rows::kRows;

constexpr bool rows_follow_the_list() {
  for (int i = 0; i < ops::kNumOps; ++i) {
    if (kOpTraits[i].op != ops::kAllOps[i]) return false;
  }
  return true;
}
static_assert(sizeof(kOpTraits) / sizeof(kOpTraits[0]) == ops::kNumOps,
              "every op of the op list (ops/op_list.h) needs its row in kOpTraits, and no more "
              "(Note [Op traits])");
static_assert(rows_follow_the_list(),
              "kOpTraits' rows must follow the op list's order (Note [Op traits])");

constexpr const OpTraits& traits(ops::OpId op) { return kOpTraits[static_cast<int>(op)]; }
constexpr bool made_by(ops::OpId op, Gen gen) { return traits(op).made_by(gen); }

// The elementwise unary ops `gen` makes, in the list's order.
template <Gen gen>
struct UnaryOps {
  static constexpr int count() {
    int n = 0;
    for (const OpTraits& t : kOpTraits) n += t.unary_elementwise() && t.made_by(gen) ? 1 : 0;
    return n;
  }
  ops::OpId ids[count()];
  constexpr UnaryOps() : ids() {
    int n = 0;
    for (const OpTraits& t : kOpTraits) {
      if (t.unary_elementwise() && t.made_by(gen)) ids[n++] = t.op;
    }
  }
  constexpr int size() const { return count(); }
  constexpr ops::OpId operator[](int i) const { return ids[i]; }
  constexpr const ops::OpId* begin() const { return ids; }
  constexpr const ops::OpId* end() const { return ids + count(); }
};
template <Gen gen>
inline constexpr UnaryOps<gen> unary_ops{};

}  // namespace ag::proptests
