// Note [Common subexpressions] (common_subexpressions.h).
#include "engine/jit/common_subexpressions.h"

#include <functional>
#include <map>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include "engine/jit/fold_zeros.h"
#include "engine/jit/schema.h"
#include "engine/jit/tracer.h"

namespace ag::jit {
namespace {

// A node whose one result is a function of its inputs and attributes alone.
bool isPure(const Node& n) {
  if (n.outputs().size() != 1) return false;
  if (n.kind() == kinds::kConstant) return true;
  const OpSchema* s = n.schema();
  return s != nullptr && s->spec != nullptr && !s->has_side_effects && s->written_inputs.empty();
}

// A view of its first input, by its spec's alias kind (broadcast_to, expand, the other view ops):
// every element it reads is one of its input's.
bool isViewOfInput0(const Node& n) {
  const OpSchema* s = n.schema();
  return s != nullptr && s->output_aliases_input == 0 && s->written_inputs.empty();
}

bool isGraphOutput(const Value* v) {
  for (const Use& u : v->uses()) {
    if (u.user->kind() == kinds::kReturn) return true;
  }
  return false;
}

// Tensors (traced constants) are equal when they are the same tensor: comparing elements would
// cost more than the constant saves.
bool sameAttribute(const AttributeValue& a, const AttributeValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, Tensor>) {
          return x.impl().get() == y.impl().get();
        } else {
          return x == y;
        }
      },
      a);
}

bool sameAttributes(const Attributes& a, const Attributes& b) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
    if (i->first != j->first || !sameAttribute(i->second, j->second)) return false;
  }
  return true;
}

// The same op (kinds are interned: Note [Node kinds] in ir.cc) on the same values.
bool sameComputation(const Node& a, const Node& b) {
  if (&a.kind() != &b.kind() || a.inputs().size() != b.inputs().size()) return false;
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    if (a.input(i) != b.input(i)) return false;
  }
  return sameAttributes(a.attrs(), b.attrs());
}

size_t hashComputation(const Node& n) {
  size_t h = std::hash<const void*>()(&n.kind());
  for (const Value* in : n.inputs()) h = h * 31 + in->id();
  return h;
}

// What a fill holds: one value, at a shape, dtype and device.
using FillKey = std::tuple<double, Shape, DType, DeviceType, int>;

}  // namespace

int64_t eliminateCommonSubexpressions(Graph& graph,
                                      const std::vector<std::optional<TensorMeta>>& metas) {
  if (writesInPlace(graph)) return 0;
  std::unordered_multimap<size_t, Node*> computed;  // by hashComputation
  std::map<FillKey, Node*> fills;                   // the first node of each fill
  std::unordered_map<size_t, double> fill_values;   // by value id (Note [Value ids])
  // The earlier node that computes what `n` (of hash `h`) does, or null.
  auto findEarlier = [&](Node& n, size_t h) -> Node* {
    const auto [first, last] = computed.equal_range(h);
    for (auto it = first; it != last; ++it) {
      if (sameComputation(*it->second, n)) return it->second;
    }
    return nullptr;
  };
  // The node that first made the fill `n` makes, where `n` makes one (recording it if first).
  auto findFill = [&](Node& n) -> Node* {
    std::optional<double> value;
    if (n.kind() == "aten::ones_like") value = 1.0;
    if (n.kind() == "aten::zeros_like") value = 0.0;
    if (isViewOfInput0(n)) {
      const auto it = fill_values.find(n.input(0)->id());
      if (it != fill_values.end()) value = it->second;
    }
    const Value* out = n.output();
    const TensorMeta* m = tracedMeta(metas, out);
    if (!value || m == nullptr) return nullptr;
    fill_values[out->id()] = *value;
    Node*& first = fills[{*value, m->shape, m->dtype, m->device.type, m->device.index}];
    if (first == nullptr) first = &n;
    return first;
  };

  int64_t removed = 0;
  for (Node* n = graph.firstNode(); n != graph.returnNode();) {
    Node* next = n->next();
    if (isPure(*n)) {
      const size_t h = hashComputation(*n);
      Node* earlier = findFill(*n);
      if (earlier == nullptr || earlier == n) earlier = findEarlier(*n, h);
      if (earlier == nullptr) {
        computed.emplace(h, n);
      } else if (!(isGraphOutput(n->output()) && isGraphOutput(earlier->output()))) {
        n->output()->replaceAllUsesWith(earlier->output());
        n->destroy();
        ++removed;
      }
    }
    n = next;
  }
  return removed;
}

}  // namespace ag::jit
