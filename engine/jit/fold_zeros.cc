// Note [Structural zeros] (fold_zeros.h).
#include "engine/jit/fold_zeros.h"

#include <map>
#include <tuple>

#include "engine/jit/schema.h"
#include "engine/jit/tracer.h"
#include "ops/ops.h"

namespace ag::jit {
namespace {

// When an op's result is zero: when some input of `any` is (an op linear in that input), and
// every input of `all` is zero or None (a sum's terms). Inputs are bits, input i = 1 << i.
struct ZeroRule {
  const char* op;
  unsigned any;
  unsigned all;
};
constexpr unsigned kFirst = 1, kSecond = 2, kThird = 4;
constexpr ZeroRule kZeroRules[] = {
    {"aten::zeros_like", 0, 0},
    {"aten::mul", kFirst | kSecond, 0},
    {"aten::div", kFirst, 0},
    {"aten::mm", kFirst | kSecond, 0},
    {"aten::bmm", kFirst | kSecond, 0},
    {"aten::matmul", kFirst | kSecond, 0},
    {"aten::linear", kFirst | kSecond, kThird},  // input, weight; bias
    {"aten::addmm", kSecond | kThird, kFirst},   // self; mat1, mat2
    {"aten::add", 0, kFirst | kSecond},
    {"aten::sub", 0, kFirst | kSecond},
    {"aten::threshold_backward", kFirst, 0},  // grad, result
    {"aten::tanh_backward", kFirst, 0},
    {"aten::sigmoid_backward", kFirst | kSecond, 0},  // grad (1 - result) result
    {"aten::neg", kFirst, 0},
    {"aten::mul_scalar", kFirst, 0},
    {"aten::scaled_product", kFirst | kSecond | kThird, 0},
    {"aten::sum", kFirst, 0},
    {"aten::sum_dim", kFirst, 0},
    {"aten::mean", kFirst, 0},
    {"aten::mean_dim", kFirst, 0},
    {"aten::sum_to", kFirst, 0},
    {"aten::broadcast_to", kFirst, 0},
    {"aten::reshape", kFirst, 0},
    {"aten::view", kFirst, 0},
    {"aten::transpose", kFirst, 0},
    {"aten::clone", kFirst, 0},
    {"aten::detach", kFirst, 0},
    {"aten::to", kFirst, 0},
};

const ZeroRule* ruleFor(const Node& n) {
  for (const ZeroRule& r : kZeroRules) {
    if (n.kind() == r.op) return &r;
  }
  return nullptr;
}

bool isNone(const Value* v) {
  return v->node()->kind() == kinds::kConstant && v->type() == Type::Tensor &&
         v->node()->attrs().count("value") == 0;
}

// A traced constant of zeros (a zero tensor the program captured, or the engine made).
bool isZeroConstant(const Node& n) {
  if (n.kind() != kinds::kConstant || n.attrs().count("value") == 0) return false;
  const auto* t = std::get_if<Tensor>(&n.attrs().at("value"));
  if (t == nullptr || !t->defined() || t->device() != kCPU) return false;
  bool all_zero = true;
  dispatch_dtype(t->dtype(), [&](auto zero) {
    const auto* data = t->data<decltype(zero)>();
    for (int64_t i = 0; i < t->numel() && all_zero; ++i) all_zero = data[i] == zero;
  });
  return all_zero;
}

}  // namespace

bool writesInPlace(const Node& n) {
  return n.isDifferentiableGraph() ||
         (n.schema() != nullptr && !n.schema()->written_inputs.empty());
}

bool writesInPlace(const Graph& graph) {
  for (const Node* n : graph.nodes()) {
    if (writesInPlace(*n)) return true;
  }
  return false;
}

int64_t foldStructuralZeros(Graph& graph, const std::vector<std::optional<TensorMeta>>& metas) {
  if (writesInPlace(graph)) return 0;
  const std::vector<Node*> nodes = graph.nodes();
  std::vector<char> zero(graph.valueIdBound(), 0);
  auto isZero = [&](const Value* v) { return zero[v->id()] != 0; };
  // One constant per shape, dtype and device, made when first needed.
  std::map<std::tuple<Shape, DType, DeviceType, int>, Value*> constants;
  auto zerosOf = [&](const TensorMeta& m) {
    Value*& c = constants[{m.shape, m.dtype, m.device.type, m.device.index}];
    if (c == nullptr) {
      Attributes attrs{{"value", ops::zeros(m.shape, m.dtype, m.device)}};
      Node* k = graph.create(kinds::kConstant, {}, std::move(attrs), 1);
      k->insertBefore(graph.firstNode());
      c = k->output();
      zero.resize(graph.valueIdBound(), 0);
      zero[c->id()] = 1;
    }
    return c;
  };

  int64_t folded = 0;
  for (Node* n : nodes) {
    if (isZeroConstant(*n)) {
      zero[n->output()->id()] = 1;
      continue;
    }
    const ZeroRule* rule = ruleFor(*n);
    if (rule == nullptr || n->outputs().size() != 1) continue;
    bool any = rule->any == 0, all = true;
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const Value* in = n->input(i);
      if ((rule->any >> i) & 1) any = any || isZero(in);
      if ((rule->all >> i) & 1) all = all && (isZero(in) || isNone(in));
    }
    if (!any || !all) continue;
    Value* out = n->output();
    const TensorMeta* meta = tracedMeta(metas, out);
    if (meta == nullptr) continue;  // not traced (no shape known): left as it is
    out->replaceAllUsesWith(zerosOf(*meta));
    ++folded;
  }
  // A graph output that became a constant: a fresh tensor per run, as the op gave.
  const ValueList outputs = graph.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    Value* v = outputs[i];
    if (v->node()->kind() != kinds::kConstant || !isZero(v)) continue;
    Node* fresh = graph.create("aten::zeros_like", {v});
    fresh->insertBefore(graph.returnNode());
    graph.returnNode()->replaceInput(i, fresh->output());
  }
  return folded;
}

int64_t eliminateDeadCode(Graph& graph) {
  int64_t removed = 0;
  for (Node* n = graph.lastNode(); n != graph.returnNode();) {
    Node* prev = n->prev();
    bool dead = !n->hasSideEffects() && !writesInPlace(*n);
    for (const Value* out : n->outputs()) dead = dead && !out->hasUses();
    if (dead) {
      n->destroy();
      ++removed;
    }
    n = prev;
  }
  return removed;
}

}  // namespace ag::jit
