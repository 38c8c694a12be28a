#include "engine/jit/code.h"

#include <algorithm>
#include <cstdio>

#include "engine/accumulate_grad.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/jit/differentiable_graph.h"
#include "engine/jit/schema.h"
#include "engine/options.h"
#include "ops/ops.h"

namespace ag::jit {

// Note [Releasing dead values]
// A whole-graph run (Code::runGraph: a jit::CompiledFunction's call) drops the frame's reference
// to each value after the last instruction that reads it, as PyTorch's interpreter does, so that
// the caching allocator hands its memory to the values defined later. A gradient graph holds
// hundreds of batch-sized temporaries (seed 001's compiled Tanh hessian step: 221 ops); kept to
// the end of the run, each costs fresh pages and a cold cache. With grad mode off (a compiled
// function's call), a sum (aten::add, prim::AutogradAdd) whose operand dies there and is held by
// nothing else (can_sum_into) takes the other operand in place instead of writing a new tensor:
// Note [Summing gradients in place] in engine/engine.cc, the same bits. Runs with an observer
// keep every value (it may compare storages, which reuse would make look shared), and so do runs
// over part of a frame (Code::run: a group's backward reads the frame afterwards).
//
// Such a sum can go one step further, as the eager engine's does (Note [Sums fused into
// formulas], engine/engine.cc): when its other operand is the result of an op that can add its
// result into a tensor (OpForward::add_into: tanh_backward, scaled_product), read by nothing but
// the sum, and the dying operand exists when that op runs and is read by nobody in between, the
// op adds its values into the dying operand in the same pass (adds_into) and leaves that tensor
// in both slots; the sum, seeing its two operands are one tensor (which the op's own result never
// is), passes it on (fused_operand).

struct Code::Instruction {
  enum class Op { kCall, kConstant, kListConstruct, kListUnpack, kPrint, kAutogradAdd, kGroup };
  Op op;
  const Node* node;
  std::vector<int> in, out;
  std::vector<int> dead_after;  // slots whose last reader this is (not the graph's outputs)
  std::vector<int> sums_into;   // a sum's operands (0, 1) that die here: candidates to write
  int adds_into = -1;      // an op's: the slot of the dying sum operand it may add its result into
  int fused_operand = -1;  // a sum's: its operand (0, 1) made by an op with adds_into set
  const ops::OpSpec* spec = nullptr;  // kCall
  ops::OpAttrs attrs;                 // kCall
  IValue constant;                    // kConstant
  std::unique_ptr<DifferentiableGraphOp> group;
};

namespace {

using Instruction = Code::Instruction;

Instruction::Op opOf(const Node& n) {
  const std::string& k = n.kind();
  if (n.schema() != nullptr && n.schema()->spec != nullptr) return Instruction::Op::kCall;
  if (k == kinds::kConstant) return Instruction::Op::kConstant;
  if (k == kinds::kListConstruct) return Instruction::Op::kListConstruct;
  if (k == kinds::kListUnpack) return Instruction::Op::kListUnpack;
  if (k == kinds::kPrint) return Instruction::Op::kPrint;
  if (k == kinds::kAutogradAdd) return Instruction::Op::kAutogradAdd;
  if (n.isDifferentiableGraph()) return Instruction::Op::kGroup;
  throw IrError("executor: no kernel for op '" + k + "'");
}

IValue constantOf(const Node& n) {
  auto it = n.attrs().find("value");
  if (it == n.attrs().end()) return Tensor();  // None
  if (const double* d = std::get_if<double>(&it->second)) return *d;
  return std::get<Tensor>(it->second);
}

bool hasType(const Value* v, const IValue& value) {
  switch (v->type()) {
    case Type::Tensor:
      return std::holds_alternative<Tensor>(value);
    case Type::TensorList:
      return std::holds_alternative<TensorList>(value);
    case Type::Float:
      return std::holds_alternative<double>(value);
  }
  return false;
}

}  // namespace

Code::Code(const Graph& graph) : graph_(graph) {
  auto define = [&](const Value* v) {
    slots_[v] = static_cast<int>(slot_values_.size());
    slot_values_.push_back(v);
  };
  for (const Value* in : graph.inputs()) define(in);
  for (Node* n = graph.firstNode(); n != graph.returnNode(); n = n->next()) {
    Instruction in;
    in.op = opOf(*n);
    in.node = n;
    for (const Value* v : n->inputs()) in.in.push_back(slots_.at(v));
    for (const Value* v : n->outputs()) {
      define(v);
      in.out.push_back(slots_.at(v));
    }
    switch (in.op) {
      case Instruction::Op::kCall:
        in.spec = n->schema()->spec;
        in.attrs = toOpAttrs(*n);
        break;
      case Instruction::Op::kConstant:
        in.constant = constantOf(*n);
        break;
      case Instruction::Op::kGroup:
        in.group = std::make_unique<DifferentiableGraphOp>(*n);
        break;
      default:
        break;
    }
    instructions_.push_back(std::move(in));
  }
  findLastReaders();
}

void Code::findLastReaders() {
  constexpr int kKept = -2;  // returned: never released
  // The last instruction that reads each slot (or defines it, if nothing reads it), and the one
  // that did before it (-1: a graph input that nothing else read).
  std::vector<int> last_reader(slot_values_.size(), -1), before_last(slot_values_.size(), -1);
  auto touch = [&](int s, int i) {
    if (last_reader[s] == i) return;
    before_last[s] = last_reader[s];
    last_reader[s] = i;
  };
  for (size_t i = 0; i < instructions_.size(); ++i) {
    for (int s : instructions_[i].out) touch(s, static_cast<int>(i));  // unread: dies here
    for (int s : instructions_[i].in) touch(s, static_cast<int>(i));
  }
  for (const Value* out : graph_.outputs()) last_reader[slots_.at(out)] = kKept;
  for (size_t s = 0; s < last_reader.size(); ++s) {
    if (last_reader[s] >= 0) instructions_[last_reader[s]].dead_after.push_back(s);
  }
  for (size_t i = 0; i < instructions_.size(); ++i) {
    Instruction& in = instructions_[i];
    const bool sum = in.op == Instruction::Op::kAutogradAdd || in.node->kind() == "aten::add";
    if (!sum || in.in.size() != 2 || in.in[0] == in.in[1]) continue;
    for (int k = 0; k < 2; ++k) {
      if (last_reader[in.in[k]] == static_cast<int>(i)) in.sums_into.push_back(k);
    }
    if (in.sums_into.size() == 2) findFusedSum(in, before_last);
  }
}

// The sum `in`, whose operands both die at it: one of them may be made by an op that adds its
// result into the other (Note [Releasing dead values]).
void Code::findFusedSum(Instruction& in, const std::vector<int>& before_last) {
  for (int k = 0; k < 2; ++k) {
    const int made = in.in[k], dying = in.in[1 - k];
    const int op = before_last[made];  // its definer, if the sum is its only reader
    if (op < 0) continue;
    Instruction& maker = instructions_[op];
    if (maker.op != Instruction::Op::kCall || maker.out.size() != 1 || maker.out[0] != made ||
        maker.spec->forward().add_into == nullptr) {
      continue;
    }
    // The dying operand exists when the op runs, the op does not read it, nor does anything
    // between the op and the sum.
    if (before_last[dying] >= op) continue;
    if (std::find(maker.in.begin(), maker.in.end(), dying) != maker.in.end()) continue;
    maker.adds_into = dying;
    in.fused_operand = k;
    return;
  }
}

Code::~Code() = default;

size_t Code::numInstructions() const { return instructions_.size(); }

namespace {

// A sum whose operand dies at it and is seen by no one else writes into that operand (Note
// [Releasing dead values]); only with grad mode off, where the write records nothing.
bool sumIntoDyingOperand(const Instruction& in, std::vector<IValue>& frame) {
  if (in.sums_into.empty() || grad_enabled()) return false;
  for (int k : in.sums_into) {
    Tensor& sum = std::get<Tensor>(frame[in.in[k]]);
    const Tensor& other = std::get<Tensor>(frame[in.in[1 - k]]);
    if (sum.defined() && other.defined() && can_sum_into(sum, other)) {
      ops::add_(sum, other);  // a + b == b + a, bit for bit
      frame[in.out[0]] = std::move(sum);
      return true;
    }
  }
  return false;
}

// A call's input tensors, from the frame.
TensorList callArgs(const Instruction& in, const std::vector<IValue>& frame) {
  TensorList args;
  args.reserve(in.in.size());
  for (int s : in.in) args.push_back(std::get<Tensor>(frame[s]));
  return args;
}

// An op whose result a sum adds into a dying operand adds it there itself, in one pass, and
// leaves that operand in its own result's slot too (Note [Releasing dead values]).
bool addIntoDyingOperand(const Instruction& in, std::vector<IValue>& frame) {
  if (in.adds_into < 0) return false;
  const Tensor& sum = std::get<Tensor>(frame[in.adds_into]);
  if (!can_add_into(sum, current_options())) return false;
  const TensorList args = callArgs(in, frame);
  if (!in.spec->forward().add_into(sum, ops::OpArgs(args, in.attrs))) return false;
  frame[in.out[0]] = sum;
  return true;
}

// The sum after such an op: both operands are one tensor, the sum already made, passed on.
bool passOnFusedSum(const Instruction& in, std::vector<IValue>& frame) {
  if (in.fused_operand < 0) return false;
  const Tensor& made = std::get<Tensor>(frame[in.in[in.fused_operand]]);
  Tensor& sum = std::get<Tensor>(frame[in.in[1 - in.fused_operand]]);
  if (!made.defined() || !made.is_same(sum)) return false;
  frame[in.out[0]] = std::move(sum);
  return true;
}

// The in-place forms above, for a whole-graph run: whether one of them did the instruction's
// work.
bool runInPlace(const Instruction& in, std::vector<IValue>& frame) {
  return addIntoDyingOperand(in, frame) || passOnFusedSum(in, frame) ||
         sumIntoDyingOperand(in, frame);
}

}  // namespace

void Code::run(std::vector<IValue>& frame, const RunOptions& options, const std::vector<char>* mask,
               size_t first, size_t last) const {
  run(frame, options, mask, first, last, /*release_dead=*/false);
}

void Code::run(std::vector<IValue>& frame, const RunOptions& options, const std::vector<char>* mask,
               size_t first, size_t last, bool release_dead) const {
  for (size_t i = first; i < last; ++i) {
    if (mask != nullptr && !(*mask)[i]) continue;
    const Instruction& in = instructions_[i];
    if (!(release_dead && runInPlace(in, frame))) execute(in, frame, options);
    if (options.observe) {
      for (size_t k = 0; k < in.out.size(); ++k)
        options.observe(in.node->output(k), frame[in.out[k]]);
    }
    if (release_dead) {
      for (int s : in.dead_after) frame[s] = IValue();
    }
  }
}

void Code::execute(const Instruction& in, std::vector<IValue>& frame,
                   const RunOptions& options) const {
  auto tensor = [&](size_t k) -> const Tensor& { return std::get<Tensor>(frame[in.in[k]]); };
  switch (in.op) {
    case Instruction::Op::kCall: {
      const TensorList args = callArgs(in, frame);
      frame[in.out[0]] = in.spec->forward().call(ops::OpArgs(args, in.attrs));
      return;
    }
    case Instruction::Op::kConstant:
      frame[in.out[0]] = in.constant;
      return;
    case Instruction::Op::kListConstruct: {
      TensorList list;
      for (size_t k = 0; k < in.in.size(); ++k) list.push_back(tensor(k));
      frame[in.out[0]] = std::move(list);
      return;
    }
    case Instruction::Op::kListUnpack: {
      const TensorList& list = std::get<TensorList>(frame[in.in[0]]);
      AG_CHECK(list.size() == in.out.size(), "prim::ListUnpack: a list of ", list.size(),
               " tensors unpacked into ", in.out.size(), " values");
      for (size_t k = 0; k < list.size(); ++k) frame[in.out[k]] = list[k];
      return;
    }
    case Instruction::Op::kPrint:
      if (options.log != nullptr) options.log->push_back(toString(frame[in.in[0]]));
      return;
    case Instruction::Op::kAutogradAdd: {
      // A sum of gradients, either of which may be missing (Note [Gradient graphs]).
      const Tensor& a = tensor(0);
      const Tensor& b = tensor(1);
      frame[in.out[0]] = !a.defined() ? b : !b.defined() ? a : ops::add(a, b);
      return;
    }
    case Instruction::Op::kGroup: {
      std::vector<IValue> args;
      args.reserve(in.in.size());
      for (int s : in.in) args.push_back(frame[s]);
      std::vector<IValue> results = in.group->run(args, options);
      for (size_t k = 0; k < results.size(); ++k) frame[in.out[k]] = std::move(results[k]);
      return;
    }
  }
}

std::vector<IValue> Code::runGraph(const std::vector<IValue>& inputs,
                                   const RunOptions& options) const {
  const auto& params = graph_.inputs();
  if (inputs.size() != params.size()) {
    throw IrError("executor: graph takes " + std::to_string(params.size()) + " inputs, got " +
                  std::to_string(inputs.size()));
  }
  std::vector<IValue> frame(numSlots());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!hasType(params[i], inputs[i])) {
      throw IrError("executor: input %" + params[i]->name() + " expects a value of type " +
                    typeName(params[i]->type()));
    }
    frame[i] = inputs[i];
    if (options.observe) options.observe(params[i], frame[i]);
  }
  run(frame, options, nullptr, 0, numInstructions(), /*release_dead=*/!options.observe);
  std::vector<IValue> outputs;
  for (const Value* out : graph_.outputs()) outputs.push_back(frame[slots_.at(out)]);
  return outputs;
}

}  // namespace ag::jit
