#include "proptests/jit/random_ir_graph.h"

#include <functional>
#include <optional>
#include <string>
#include <unordered_set>

#include "engine/error.h"
#include "ops/ops.h"

namespace ag::proptests {
namespace {

const std::vector<Shape>& inputShapeMenu() {
  static const std::vector<Shape> menu = {{2, 3}, {3, 2}, {3}, {2, 2}, {}};
  return menu;
}

using ops::OpId;

// The node kinds, in a fixed order (a node spec's op is an index modulo their number; recorded
// seeds depend on the order): first ops of the op list (ops/op_list.h) as aten:: nodes named by
// the list, then kUnaryKinds nodes of an elementwise unary op of the traits table (Note [Op
// traits]) chosen by the node's attr, then prim:: nodes.
constexpr OpId kAtenOps[] = {OpId::kAdd,        OpId::kSub,       OpId::kMul,     OpId::kSum,
                             OpId::kMulScalar,  OpId::kTranspose, OpId::kReshape, OpId::kDetach,
                             OpId::kAddInplace, OpId::kMulInplace};
constexpr unsigned kNumAtenOps = sizeof(kAtenOps) / sizeof(kAtenOps[0]);
constexpr unsigned kUnaryKinds = 5;
constexpr auto& kUnaryOps = ag::proptests::unary_ops<ag::proptests::kIrGraph>;
enum class Prim { ListConstruct, ListUnpack, Constant, Print, kCount };
constexpr unsigned kNumKinds = kNumAtenOps + kUnaryKinds + static_cast<unsigned>(Prim::kCount);

std::string kindOf(OpId op) { return std::string("aten::") + ops::op_name(op); }
std::string kindOf(Prim prim) {
  const char* const names[] = {"prim::ListConstruct", "prim::ListUnpack", "prim::Constant",
                               "prim::Print"};
  return names[static_cast<int>(prim)];
}

// NumPy broadcasting (as the ops do), or nullopt.
std::optional<Shape> broadcastShape(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}
bool broadcastable(const Shape& a, const Shape& b) { return broadcastShape(a, b).has_value(); }

// A value defined so far, with what the builder knows of its run-time shape.
struct Known {
  Value* value;
  Shape shape;                     // tensors
  std::vector<Shape> list_shapes;  // lists
  // The storage a tensor's elements live in (a view or an in-place result shares its operand's),
  // and the storages of a list's items: an in-place op whose other operand shares self's storage
  // with another layout is a partial overlap, refused at run time (Note [Overlapping writes],
  // ops/inplace.cc), so the generator pairs only operands over other storages, or self with
  // itself.
  int storage = -1;
  std::vector<int> list_storages;
};

class Builder {
 public:
  explicit Builder(const IrGraphSpec& spec) : spec_(spec) {}

  BuiltIrGraph build() {
    BuiltIrGraph out;
    out.graph = std::make_unique<Graph>();
    g_ = out.graph.get();
    for (size_t i = 0; i < spec_.input_shapes.size(); ++i) {
      Shape s = inputShapeMenu()[spec_.input_shapes[i] % inputShapeMenu().size()];
      out.input_shapes.push_back(s);
      known_.push_back(
          {g_->addInput(Type::Tensor, "in" + std::to_string(i)), s, {}, next_storage_++, {}});
    }
    for (const IrNodeSpec& n : spec_.nodes) addNode(n);
    for (const Known& k : known_) {
      if (k.value->node() == g_->paramNode()) continue;
      if (!k.value->hasUses() || returned_.count(k.value) != 0) g_->registerOutput(k.value);
    }
    return out;
  }

 private:
  using Pred = std::function<bool(const Known&)>;

  // The first value at or after index `idx` (mod the count) that satisfies `ok`.
  const Known* pick(unsigned idx, const Pred& ok) const {
    if (known_.empty()) return nullptr;
    for (size_t k = 0; k < known_.size(); ++k) {
      const Known& cand = known_[(idx + k) % known_.size()];
      if (ok(cand)) return &cand;
    }
    return nullptr;
  }

  static bool isTensor(const Known& k) { return k.value->type() == Type::Tensor; }

  template <typename Kind>
  Node* emit(Kind kind, const std::vector<Value*>& inputs, Attributes attrs = {},
             int num_outputs = -1) {
    return g_->append(kindOf(kind), inputs, std::move(attrs), num_outputs);
  }

  // Defines n's outputs; `storages` are the outputs' storages where they alias an operand's (a
  // list's: its items'), else each output gets storage of its own.
  void define(Node* n, const IrNodeSpec& spec, std::vector<Shape> shapes,
              std::vector<Shape> list_shapes = {}, std::vector<int> storages = {}) {
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      Known k{n->output(i),
              i < shapes.size() ? shapes[i] : Shape{},
              {},
              i < storages.size() ? storages[i] : next_storage_++,
              {}};
      if (n->output(i)->type() == Type::TensorList) {
        k.list_shapes = list_shapes;
        k.list_storages = storages;
      }
      known_.push_back(k);
    }
    if (spec.also_return && !n->outputs().empty()) returned_.insert(n->output(0));
  }

  static unsigned operand(const IrNodeSpec& spec, size_t i) {
    return i < spec.operands.size() ? spec.operands[i] : 0u;
  }

  void addNode(const IrNodeSpec& spec) {
    const unsigned kind = spec.op % kNumKinds;
    auto operand = [&](size_t i) { return Builder::operand(spec, i); };
    if (kind >= kNumAtenOps + kUnaryKinds) {
      return addPrim(static_cast<Prim>(kind - kNumAtenOps - kUnaryKinds), spec);
    }
    if (kind >= kNumAtenOps) {  // an elementwise unary op, on an input of its domain
      const OpId op = kUnaryOps[(kind - kNumAtenOps + spec.attr) % kUnaryOps.size()];
      const Known* a = pick(operand(0), isTensor);
      if (a == nullptr) return;
      Value* x = a->value;
      switch (ag::proptests::traits(op).domain) {
        case ag::proptests::Domain::kAny:
          break;
        case ag::proptests::Domain::kPositive:  // exp(tanh(x)), in [1/e, e]
          x = emit(OpId::kExp, {emit(OpId::kTanh, {x})->output(0)})->output(0);
          break;
        case ag::proptests::Domain::kBounded:  // tanh(x)
          x = emit(OpId::kTanh, {x})->output(0);
          break;
      }
      define(emit(op, {x}), spec, {a->shape});
      return;
    }
    const OpId op = kAtenOps[kind];
    switch (op) {
      case OpId::kAdd:
      case OpId::kSub:
      case OpId::kMul: {
        const Known* a = pick(operand(0), isTensor);
        if (a == nullptr) return;
        Shape sa = a->shape;
        const Known* b = pick(
            operand(1), [&](const Known& k) { return isTensor(k) && broadcastable(sa, k.shape); });
        if (b == nullptr) return;
        Shape out = *broadcastShape(sa, b->shape);
        define(emit(op, {a->value, b->value}), spec, {out});
        return;
      }
      case OpId::kSum: {
        const Known* a = pick(operand(0), isTensor);
        if (a == nullptr) return;
        define(emit(op, {a->value}), spec, {Shape{}});
        return;
      }
      case OpId::kMulScalar: {
        const Known* a = pick(operand(0), isTensor);
        if (a == nullptr) return;
        Shape sa = a->shape;
        const double scalar = (static_cast<double>(spec.attr % 7) - 3.0) * 0.5;
        define(emit(op, {a->value}, {{"scalar", scalar}}), spec, {sa});
        return;
      }
      case OpId::kTranspose: {
        const Known* a =
            pick(operand(0), [](const Known& k) { return isTensor(k) && k.shape.size() >= 2; });
        if (a == nullptr) return;
        Shape s = a->shape;
        std::swap(s[0], s[1]);
        define(emit(op, {a->value}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}), spec, {s}, {},
               {a->storage});
        return;
      }
      case OpId::kReshape: {
        const Known* a = pick(operand(0), isTensor);
        if (a == nullptr) return;
        int64_t numel = 1;
        for (int64_t d : a->shape) numel *= d;
        Shape s = spec.attr % 2 == 0 ? Shape{numel} : Shape{1, numel};
        define(emit(op, {a->value}, {{"shape", s}}), spec, {s}, {}, {a->storage});
        return;
      }
      case OpId::kDetach: {  // a view without history
        const Known* a = pick(operand(0), isTensor);
        if (a == nullptr) return;
        Shape sa = a->shape;
        define(emit(op, {a->value}), spec, {sa}, {}, {a->storage});
        return;
      }
      case OpId::kAddInplace:
      case OpId::kMulInplace: {
        const Known* self = pick(operand(0), isTensor);
        if (self == nullptr) return;
        Shape ss = self->shape;
        const int storage = self->storage;
        Value* const target = self->value;
        const Known* other = pick(operand(1), [&](const Known& k) {
          return isTensor(k) && broadcastable(ss, k.shape) && *broadcastShape(ss, k.shape) == ss &&
                 (k.storage != storage || k.value == target);
        });
        if (other == nullptr) return;
        define(emit(op, {self->value, other->value}), spec, {ss}, {}, {storage});
        return;
      }
      default:  // not a node kind here (the traits table's kIrGraph column)
        return;
    }
  }

  void addPrim(Prim prim, const IrNodeSpec& spec) {
    auto operand = [&](size_t i) { return Builder::operand(spec, i); };
    switch (prim) {
      case Prim::Print: {
        const Known* a = pick(operand(0), isTensor);
        if (a == nullptr) return;
        Shape sa = a->shape;
        define(emit(prim, {a->value}), spec, {sa}, {}, {a->storage});
        return;
      }
      case Prim::ListConstruct: {
        const Known* first = pick(operand(0), isTensor);
        if (first == nullptr) return;
        Shape s = first->shape;
        std::vector<Value*> items{first->value};
        std::vector<int> storages{first->storage};
        for (unsigned i = 0; i < spec.attr % 3; ++i) {
          const Known* k = pick(operand(1 + i % 2) + i,
                                [&](const Known& c) { return isTensor(c) && c.shape == s; });
          if (k != nullptr) {
            items.push_back(k->value);
            storages.push_back(k->storage);
          }
        }
        std::vector<Shape> shapes(items.size(), s);
        define(emit(prim, items), spec, {Shape{}}, shapes, storages);
        return;
      }
      case Prim::ListUnpack: {
        const Known* l =
            pick(operand(0), [](const Known& k) { return k.value->type() == Type::TensorList; });
        if (l == nullptr) return;
        std::vector<Shape> shapes = l->list_shapes;
        std::vector<int> storages = l->list_storages;
        define(emit(prim, {l->value}, {}, static_cast<int>(shapes.size())), spec, shapes, {},
               storages);
        return;
      }
      case Prim::Constant: {
        double v = (static_cast<double>(spec.attr % 7) - 3.0) * 0.5;
        define(emit(prim, {}, {{"value", v}}), spec, {Shape{}});
        return;
      }
      case Prim::kCount:
        return;
    }
  }

  const IrGraphSpec& spec_;
  Graph* g_ = nullptr;
  std::vector<Known> known_;
  int next_storage_ = 0;
  std::unordered_set<const Value*> returned_;
};

}  // namespace

std::vector<IValue> BuiltIrGraph::makeInputs() const {
  std::vector<IValue> inputs;
  for (size_t i = 0; i < input_shapes.size(); ++i) {
    int64_t numel = 1;
    for (int64_t d : input_shapes[i]) numel *= d;
    std::vector<double> values(static_cast<size_t>(numel));
    for (int64_t k = 0; k < numel; ++k) {
      values[k] = 0.25 * static_cast<double>((k * 7 + static_cast<int64_t>(i) * 3) % 11) - 1.2;
    }
    inputs.push_back(ops::from_vector(values, input_shapes[i]));
  }
  return inputs;
}

BuiltIrGraph buildGraph(const IrGraphSpec& spec) { return Builder(spec).build(); }

rc::Gen<IrGraphSpec> genGraphSpec() {
  auto node = rc::gen::build<IrNodeSpec>(
      rc::gen::set(&IrNodeSpec::op, rc::gen::inRange(0u, kNumKinds)),
      rc::gen::set(&IrNodeSpec::operands,
                   rc::gen::container<std::vector<unsigned>>(3, rc::gen::inRange(0u, 64u))),
      rc::gen::set(&IrNodeSpec::attr, rc::gen::inRange(0u, 16u)),
      rc::gen::set(&IrNodeSpec::also_return,
                   rc::gen::weightedElement<bool>({{1, true}, {5, false}})));
  return rc::gen::build<IrGraphSpec>(
      rc::gen::set(
          &IrGraphSpec::input_shapes,
          rc::gen::resize(
              3, rc::gen::nonEmpty(rc::gen::container<std::vector<unsigned>>(
                     rc::gen::inRange(0u, static_cast<unsigned>(inputShapeMenu().size())))))),
      rc::gen::set(&IrGraphSpec::nodes, rc::gen::container<std::vector<IrNodeSpec>>(node)));
}

void showValue(const IrGraphSpec& spec, std::ostream& os) {
  BuiltIrGraph built = buildGraph(spec);
  os << "input shapes:";
  for (const Shape& s : built.input_shapes) os << " " << to_string(s);
  os << "\n" << toString(*built.graph);
}

}  // namespace ag::proptests
