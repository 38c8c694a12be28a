#include "proptests/random_graph.h"

#include <sstream>

#include "engine/describe_graph.h"
#include "engine/function.h"
#include "ops/ops.h"
#include "proptests/op_call.h"

namespace ag::proptests {

namespace {

const Shape kShapeFamily[] = {{2, 3}, {3}, {2, 1}, {1, 3}, {1}, {}};
constexpr int kNumShapes = sizeof(kShapeFamily) / sizeof(kShapeFamily[0]);

const char* const kOpNames[] = {"add",     "sub",        "mul",          "div_safe",
                                "unary",   "pow_scalar", "pow_tensor",   "sum_keepdim",
                                "sum_all", "mean",       "reshape_back", "transpose2",
                                "matmul",  "linear",     "log_softmax",  "cross_entropy",
                                "dropout", "custom_mul", "custom_two"};
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == static_cast<int>(StepKind::kCount));

// The seed's Mul (issue 56500): computes each gradient only when this call needs it.
struct CustomMul : Function<CustomMul> {
  static constexpr const char* name = "CustomMul";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    ctx.save_for_backward({in[0], in[1]});
    return {ops::mul(in[0], in[1])};
  }
  static TensorList backward(BackwardCtx& ctx, const TensorList& grads) {
    custom_function_log().push_back(
        {&ctx.node(), {ctx.needs_input_grad(0), ctx.needs_input_grad(1)}});
    TensorList saved = ctx.saved_tensors();
    TensorList out(2);
    // Gradients are summed back to each input's shape (broadcasting).
    if (ctx.needs_input_grad(0))
      out[0] = ops::sum_to(ops::mul(grads[0], saved[1]), saved[0].shape());
    if (ctx.needs_input_grad(1))
      out[1] = ops::sum_to(ops::mul(grads[0], saved[0]), saved[1].shape());
    return out;
  }
};

// Two outputs from one node, (a * b, a - b), so that graphs hold multi-output nodes whose outputs
// are used, requested or left without a gradient independently.
struct CustomTwo : Function<CustomTwo> {
  static constexpr const char* name = "CustomTwo";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    ctx.save_for_backward({in[0], in[1]});
    return {ops::mul(in[0], in[1]), ops::sub(in[0], in[1])};
  }
  static TensorList backward(BackwardCtx& ctx, const TensorList& grads) {
    custom_function_log().push_back(
        {&ctx.node(), {ctx.needs_input_grad(0), ctx.needs_input_grad(1)}});
    TensorList saved = ctx.saved_tensors();
    // A missing output gradient arrives as zeros (as in PyTorch's materialize_grads default).
    TensorList out(2);
    if (ctx.needs_input_grad(0)) {
      out[0] = ops::sum_to(ops::add(ops::mul(grads[0], saved[1]), grads[1]), saved[0].shape());
    }
    if (ctx.needs_input_grad(1)) {
      out[1] = ops::sum_to(ops::sub(ops::mul(grads[0], saved[0]), grads[1]), saved[1].shape());
    }
    return out;
  }
};

Tensor as_2x3(const Tensor& t) { return ops::broadcast_to(t, {2, 3}); }

Tensor gram(const Tensor& b) {  // 0.2 * B^T B, [3, 3]
  Tensor m = as_2x3(b);
  return ops::mul(ops::mm(ops::transpose(m, 0, 1), m), 0.2);
}

// An elementwise unary op on an input of its domain (Note [Op traits]).
Tensor apply_unary(ops::OpId op, const Tensor& a) {
  switch (traits(op).domain) {
    case Domain::kAny:
      break;
    case Domain::kPositive:
      return call_unary(op, ops::add(ops::mul(a, a), 1.0));
    case Domain::kBounded:
      return call_unary(op, ops::tanh(a));
  }
  return call_unary(op, a);
}

TensorList apply_step(const StepSpec& step, const Tensor& a, const Tensor& b) {
  using namespace ops;
  const uint32_t b_index = step.b;
  switch (kind_of(step)) {
    case StepKind::kAdd:
      return {add(a, b)};
    case StepKind::kSub:
      return {sub(a, b)};
    case StepKind::kMul:
      return {mul(a, b)};
    case StepKind::kDivSafe:
      return {div(a, add(mul(b, b), 1.0))};
    case StepKind::kUnary:
      return {apply_unary(unary_of(step), a)};
    case StepKind::kPowScalar:
      return {pow(a, 2.0)};
    case StepKind::kPowTensor:
      return {pow(add(sigmoid(a), 0.5), b)};
    case StepKind::kSumKeepdim:
      return {a.dim() == 0 ? sum(a) : sum(a, static_cast<int64_t>(b_index % a.dim()), true)};
    case StepKind::kSumAll:
      return {sum(a)};
    case StepKind::kMean:
      return {mean(a)};
    case StepKind::kReshapeBack:
      return {reshape(reshape(a, {-1}), a.shape())};
    case StepKind::kTranspose2:
      return {a.dim() == 2 ? transpose(transpose(a, 0, 1), 0, 1) : a};
    case StepKind::kMatmul:
      return {mm(as_2x3(a), gram(b))};
    case StepKind::kLinear:
      return {linear(as_2x3(a), gram(b), sum(as_2x3(b), 0))};
    case StepKind::kLogSoftmax:
      return {log_softmax(as_2x3(a), 1)};
    case StepKind::kCrossEntropy:
      return {cross_entropy(
          as_2x3(a), {static_cast<int64_t>(b_index % 3), static_cast<int64_t>(b_index / 3 % 3)})};
    case StepKind::kDropout:
      return {dropout(a, 0.3, /*train=*/true, b_index)};
    case StepKind::kCustomMul:
      return {CustomMul::apply({a, b})[0]};
    case StepKind::kCustomTwo:
      return CustomTwo::apply({a, b});
    case StepKind::kCount:
      break;
  }
  return {a};
}

// Values that require grad, by index into `values`.
std::vector<size_t> differentiable(const TensorList& values) {
  std::vector<size_t> out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].requires_grad()) out.push_back(i);
  }
  return out;
}

int shape_index(int choice) { return ((choice % kNumShapes) + kNumShapes) % kNumShapes; }

bool leaf_requires_grad(const GraphSpec& spec, size_t i) {
  if (i == 0 || spec.requires_grad.empty()) return true;
  return spec.requires_grad[i % spec.requires_grad.size()];
}

}  // namespace

const char* op_name(StepKind kind) { return kOpNames[static_cast<int>(kind)]; }

StepKind kind_of(const StepSpec& s) {
  const int choice = ((s.op % kNumStepChoices) + kNumStepChoices) % kNumStepChoices;
  return choice < static_cast<int>(StepKind::kCount) ? static_cast<StepKind>(choice)
                                                     : StepKind::kUnary;
}

ops::OpId unary_of(const StepSpec& s) {
  constexpr auto& unary = unary_ops<kRandomGraph>;
  return unary[s.b % unary.size()];
}

const char* step_name(const StepSpec& s) {
  return kind_of(s) == StepKind::kUnary ? ops::op_name(unary_of(s)) : op_name(kind_of(s));
}

std::vector<NeedsRecord>& custom_function_log() {
  thread_local std::vector<NeedsRecord> log;
  return log;
}

BuiltGraph build_graph(const GraphSpec& spec, const TensorList* leaves,
                       const Substitute& substitute) {
  BuiltGraph g;
  const size_t num_leaves = std::max<size_t>(1, spec.leaf_shapes.size());
  for (size_t i = 0; i < num_leaves; ++i) {
    const Shape& shape =
        kShapeFamily[shape_index(spec.leaf_shapes.empty() ? 0 : spec.leaf_shapes[i])];
    Tensor t =
        leaves ? (*leaves)[i]
               : ops::uniform(shape, -1.0, 1.0, spec.value_seed * 1000003ull + i, DType::kFloat64);
    if (!leaves) t.set_requires_grad(leaf_requires_grad(spec, i));
    g.values.push_back(substitute ? substitute(i, t) : t);
    g.leaves.push_back(t);
  }
  g.value_step.assign(g.values.size(), -1);
  for (size_t k = 0; k < spec.steps.size(); ++k) {
    const StepSpec& s = spec.steps[k];
    const size_t n = g.values.size();
    for (Tensor& v : apply_step(s, g.values[s.a % n], g.values[s.b % n])) {
      g.values.push_back(substitute ? substitute(g.values.size(), v) : std::move(v));
      g.value_step.push_back(static_cast<int>(k));
    }
  }
  const std::vector<size_t> diff = differentiable(g.values);  // never empty: leaf 0
  auto newest = [&](uint32_t k) { return diff[diff.size() - 1 - k % diff.size()]; };
  for (uint32_t o : spec.outputs) g.output_ids.push_back(newest(o));
  if (g.output_ids.empty()) g.output_ids.push_back(diff.back());
  for (uint32_t r : spec.requested) g.requested_ids.push_back(newest(r));
  if (g.requested_ids.empty()) g.requested_ids.push_back(0);
  for (size_t id : g.output_ids) g.outputs.push_back(g.values[id]);
  for (size_t id : g.requested_ids) g.requested.push_back(g.values[id]);
  return g;
}

std::string describe(const GraphSpec& spec) {
  const BuiltGraph g = build_graph(spec);
  std::ostringstream os;
  for (size_t i = 0; i < g.values.size(); ++i) {
    os << "v" << i << " = ";
    const int step = g.value_step[i];
    if (step < 0) {
      os << "leaf";
    } else {
      // The operands index the values that existed before the step's first output.
      size_t first = i;
      while (first > 0 && g.value_step[first - 1] == step) --first;
      const StepSpec& s = spec.steps[step];
      os << step_name(s) << "(v" << s.a % first << ", v" << s.b % first << ")";
      if (first != i || (i + 1 < g.values.size() && g.value_step[i + 1] == step)) {
        os << "[" << i - first << "]";
      }
      os << " [b=" << s.b << "]";
    }
    os << "  " << g.values[i].describe() << (g.values[i].requires_grad() ? " requires_grad" : "")
       << "\n";
  }
  os << "outputs:";
  for (size_t id : g.output_ids) os << " v" << id;
  os << "\nrequested inputs:";
  for (size_t id : g.requested_ids) os << " v" << id;
  os << "\nvalue_seed " << spec.value_seed << "\n";
  // The autograd graph itself, and what grad(outputs, requested) runs (engine/describe_graph.h).
  os << describe_graph(g.outputs, g.requested);
  return os.str();
}

TensorList output_grads(const TensorList& outputs) {
  TensorList out;
  for (size_t k = 0; k < outputs.size(); ++k) {
    out.push_back(ops::uniform(outputs[k].shape(), 0.5, 1.5, 7 + k, DType::kFloat64));
  }
  return out;
}

Tensor weighted_total(const TensorList& outputs) {
  Tensor total = ops::zeros({}, DType::kFloat64);
  for (size_t k = 0; k < outputs.size(); ++k) {
    Tensor w = ops::uniform(outputs[k].shape(), 0.5, 1.5, 7 + k, DType::kFloat64);
    total = ops::add(total, ops::sum(ops::mul(outputs[k], w)));
  }
  return total;
}

}  // namespace ag::proptests
