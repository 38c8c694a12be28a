#pragma once

// Random computation graphs for the property tests and the fuzz driver.
//
// A GraphSpec is plain data that RapidCheck can shrink freely: every operand, output and
// requested input is an index taken modulo the number of values that exist at that point, so any
// shrunk spec (fewer steps, smaller indices, other flags) is still a valid DAG. Shapes come from
// a family that is pairwise broadcastable ([2, 3], [3], [2, 1], [1, 3], [1], []), so every binary
// op is well-formed whatever its operands.

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/tensor.h"
#include "proptests/op_traits.h"

namespace ag::proptests {

enum class StepKind : int {
  kAdd,
  kSub,
  kMul,
  kDivSafe,  // a / (b * b + 1)
  // An elementwise unary op of the traits table (Note [Op traits]), chosen by b, on an input of
  // its domain: a positive one is a * a + 1 (log), a bounded one tanh(a) (exp).
  kUnary,
  kPowScalar,     // a ^ 2
  kPowTensor,     // (sigmoid(a) + 0.5) ^ b
  kSumKeepdim,    // sum(a, dim, keepdim=true)
  kSumAll,        // sum(a)
  kMean,          // mean(a)
  kReshapeBack,   // reshape(reshape(a, [-1]), shape(a))
  kTranspose2,    // transpose(transpose(a)) for 2-D a
  kMatmul,        // 0.2 * A @ (B^T B), A and B broadcast to [2, 3]
  kLinear,        // linear(A, 0.2 * B^T B, sum(B, 0)), A and B broadcast to [2, 3]
  kLogSoftmax,    // log_softmax(A, 1)
  kCrossEntropy,  // cross_entropy(A, targets from b)
  kDropout,       // dropout(a, 0.3, train, seed b)
  kCustomMul,     // the seed's Mul as a custom Function (records needs_input_grad)
  kCustomTwo,     // (a * b, a - b) from one two-output custom Function: two values
  kCount
};

const char* op_name(StepKind kind);

// A step's op is drawn among kNumStepChoices: the kinds, with kUnary weighted as many as the
// table's unary ops were when they were kinds of their own.
inline constexpr int kUnaryWeight = 6;
inline constexpr int kNumStepChoices = static_cast<int>(StepKind::kCount) + kUnaryWeight - 1;

struct StepSpec {
  int op = 0;  // a choice, taken modulo kNumStepChoices (kind_of)
  uint32_t a = 0;
  uint32_t b = 0;
};

StepKind kind_of(const StepSpec& step);
// The elementwise unary op of a kUnary step.
ops::OpId unary_of(const StepSpec& step);
// The step's name: its kind's, or its unary op's list name.
const char* step_name(const StepSpec& step);

struct GraphSpec {
  std::vector<int> leaf_shapes;     // index into the shape family, modulo its size
  std::vector<bool> requires_grad;  // per leaf (cycled); leaf 0 always requires grad
  std::vector<StepSpec> steps;
  // Among the values that require grad, counted from the newest (0 = the last one), modulo.
  std::vector<uint32_t> outputs;
  std::vector<uint32_t> requested;
  uint32_t value_seed = 0;
};

// A graph built from a spec: every value in creation order (leaves first). Most steps make one
// value; kCustomTwo makes two, the outputs of one node.
struct BuiltGraph {
  TensorList values;
  std::vector<int> value_step;  // the step that made each value; -1 for leaves
  TensorList leaves;
  TensorList outputs;
  TensorList requested;
  std::vector<size_t> output_ids;     // indices into values
  std::vector<size_t> requested_ids;  // indices into values
};

// With `leaves`, uses those tensors as the leaves (they must match the spec's leaf shapes),
// e.g. so gradcheck can perturb them. With `substitute`, each value (leaves included) is replaced,
// as soon as it is made, by substitute(its index, it), which the later steps then read: e.g. a
// value of a graph whose gradient a hook scales, written as a forward (proptests/
// hook_properties.cc).
using Substitute = std::function<Tensor(size_t value_id, const Tensor& value)>;
BuiltGraph build_graph(const GraphSpec& spec, const TensorList* leaves = nullptr,
                       const Substitute& substitute = nullptr);

// Fixed grad_outputs (float64) for possibly non-scalar outputs: the weights of weighted_total.
TensorList output_grads(const TensorList& outputs);

// sum_k <outputs_k, w_k> with fixed weights (float64): one scalar that depends on every element
// of every output, whose gradient the properties compare with finite differences.
Tensor weighted_total(const TensorList& outputs);

// The spec as readable text (one line per value, with shapes and requires_grad as built), as
// RapidCheck prints counterexamples.
std::string describe(const GraphSpec& spec);

// The custom Functions (kCustomMul, kCustomTwo) record, for every backward call, the
// needs_input_grad flags they saw, keyed by the node. Thread-local, cleared by the tests.
struct NeedsRecord {
  const void* node;
  bool needs[2];
};
std::vector<NeedsRecord>& custom_function_log();

}  // namespace ag::proptests
