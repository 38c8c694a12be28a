#pragma once

// Random compositions of the op set, for property tests.
//
// A CompositionSpec is only small integers (what RapidCheck generates and shrinks); build_plan()
// maps every CompositionSpec to a valid Plan: a straight-line list of op calls with all shapes
// resolved. Operand indices are taken modulo the number of values so far, shapes are derived from
// one base shape (so leaves broadcast together), and an operand that would not fit is adapted by an
// explicit, printed op (e.g. `sum(v2)` when two shapes do not broadcast, `reshape` to 2-D before
// mm). So shrinking any number always yields another valid composition.

#include <rapidcheck.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "engine/tensor.h"
#include "ops/op_list.h"
#include "proptests/op_traits.h"

namespace ag::proptests {

struct LeafSpec {
  int ones_mask = 0;  // dims of the base shape that become 1 (broadcast)
  int drop = 0;       // leading dims of the base shape left out
  bool requires_grad = true;
};

struct Step {
  int kind = 0;   // which op (modulo the number of kinds)
  int a = 0;      // first operand (modulo the values so far)
  int b = 0;      // second operand
  int param = 0;  // op-specific choice (dims, scalars, variants)
};

struct CompositionSpec {
  std::vector<int> base_dims;  // the base shape, 0 to 3 dims of size 1..3
  std::vector<LeafSpec> leaves;
  std::vector<Step> steps;
  uint64_t seed = 0;  // leaf values
};

// An instruction's op: a leaf, or an op of the op list (ops/op_list.h), with the list's names.
// Which of them the compositions generate: the traits table's kComposition column (Note [Op
// traits], proptests/op_traits.h).
#define AG_COMPOSITION_OP(Name, name, rule) k##Name,
enum class Op { kLeaf, AG_OPS(AG_COMPOSITION_OP) };
#undef AG_COMPOSITION_OP
constexpr ops::OpId op_id(Op op) { return static_cast<ops::OpId>(static_cast<int>(op) - 1); }
constexpr Op op_of(ops::OpId id) { return static_cast<Op>(static_cast<int>(id) + 1); }

struct Instr {
  Op op = Op::kLeaf;
  std::vector<int> args;  // value ids; for kLeaf: the leaf index
  double scalar = 0;      // scalar ops; dropout's p; clamp's min; masked_fill's value
  double max = 0;         // clamp's max
  int64_t dim0 = 0, dim1 = 0;
  bool keepdim = false;
  Shape shape;                   // reshape, sum_to, broadcast_to targets
  std::vector<int64_t> targets;  // nll_loss, cross_entropy
  uint64_t seed = 0;             // dropout masks
};

struct Plan {
  std::vector<Shape> leaf_shapes;
  std::vector<bool> leaf_requires_grad;
  std::vector<Instr> instrs;  // value i is the result of instrs[i]
  std::vector<Shape> shapes;  // shape of value i
  uint64_t seed = 0;
  int output() const { return static_cast<int>(instrs.size()) - 1; }
};

Plan build_plan(const CompositionSpec& program);
// Appends the instructions of one step (index: its position, seeds dropout) to `plan`, as
// build_plan does for each step. Other generators interleave values of their own by appending
// to plan.instrs and plan.shapes themselves.
void append_step(Plan& plan, const Step& step, int index);
// "leaf", or the op's name in the list ("add_scalar", "sum_dim").
const char* op_name(Op op);
// NumPy broadcasting of two shapes: whether they broadcast, and to what (the generators' own
// rule, kept independent of ops/checks.h).
bool broadcastable(const Shape& x, const Shape& y);
Shape broadcast(const Shape& x, const Shape& y);
std::string describe(const Plan& plan);

// The leaves of the plan: uniform in [-1, 1], deterministic in the plan's seed.
TensorList make_leaves(const Plan& plan, DType dtype);
// Runs the plan on the op set; returns every value (leaves included).
TensorList run(const Plan& plan, const TensorList& leaves);
// Runs one instruction on given argument values.
Tensor run_instr(const Instr& instr, const TensorList& args);

rc::Gen<CompositionSpec> program_gen();
// Picks a random program inside a property and records its size and ops for the fuzz driver.
Plan pick_plan();
void showValue(const CompositionSpec& program, std::ostream& os);  // RapidCheck prints the plan

}  // namespace ag::proptests
