#include "proptests/jit/random_program.h"

#include <algorithm>
#include <functional>
#include <string>

#include "engine/error.h"
#include "engine/jit/tracer.h"
#include "ops/ops.h"
#include "proptests/op_call.h"

namespace ag::proptests {
namespace {

using ops::OpId;

// The steps, in a fixed order (a step's op is its index modulo their number; recorded seeds
// depend on the order): ops of the op list (ops/op_list.h), then kUnarySteps steps of an
// elementwise unary op of the traits table (Note [Op traits]), chosen by the step's attr, then a
// constant made inside the program (a factory, not an op of the list).
constexpr OpId kStepOps[] = {
    OpId::kAdd,       OpId::kSub,     OpId::kMul,       OpId::kMulScalar,  OpId::kAddScalar,
    OpId::kPowScalar, OpId::kReshape, OpId::kTranspose, OpId::kDetach,     OpId::kClone,
    OpId::kSum,       OpId::kSumDim,  OpId::kMm,        OpId::kAddInplace, OpId::kMulInplace,
    OpId::kSelect,    OpId::kSlice,   OpId::kPermute,   OpId::kUnsqueeze,  OpId::kExpand};
constexpr unsigned kNumOpSteps = sizeof(kStepOps) / sizeof(kStepOps[0]);
constexpr unsigned kUnarySteps = 5;
constexpr unsigned kNumSteps = kNumOpSteps + kUnarySteps + 1;  // the last: a constant
constexpr auto& kUnaryOps = ag::proptests::unary_ops<ag::proptests::kJitProgram>;

// An elementwise unary op on an input of its domain.
Tensor unaryOnDomain(OpId op, const Tensor& x) {
  using ag::proptests::Domain;
  switch (ag::proptests::traits(op).domain) {
    case Domain::kAny:
      break;
    case Domain::kPositive:  // in [1/e, e]
      return ag::proptests::call_unary(op, ops::exp(ops::tanh(x)));
    case Domain::kBounded:  // no overflow to inf
      return ag::proptests::call_unary(op, ops::tanh(x));
  }
  return ag::proptests::call_unary(op, x);
}

// Whether a and b share storage without being the same elements in the same order.
bool overlaps_partially(const Tensor& a, const Tensor& b) {
  return a.shares_storage_with(b) &&
         (a.strides() != b.strides() || a.storage_offset() != b.storage_offset());
}

// Where a tensor's memory came from: in-place ops may write only computed memory.
enum class Root { kInput, kConstant, kComputed };

struct Entry {
  Tensor t;
  Root root;
  bool used = false;
  // Reads an element twice (an expand, or a view of one): PyTorch refuses writes into it.
  bool overlapping = false;
};

// A strided view of `x` (Note [Views of any stride], ops/views.h) along `dim`: a row or column
// (select), every other element from `start` (slice), its dims reversed (permute), a new dim of
// size 1 (unsqueeze), or that dim repeated twice (expand, which reads each element twice).
Tensor strided_view(OpId op, const Tensor& x, int64_t dim, int64_t start) {
  const int64_t size = x.shape()[static_cast<size_t>(dim)];
  switch (op) {
    case OpId::kSelect:
      return ops::select(x, dim, start % size);
    case OpId::kSlice:
      return ops::slice(x, dim, start % 2, size, 2);
    case OpId::kPermute: {
      std::vector<int64_t> reversed;
      for (int64_t d = x.dim() - 1; d >= 0; --d) reversed.push_back(d);
      return ops::permute(x, reversed);
    }
    case OpId::kUnsqueeze:
      return ops::unsqueeze(x, dim);
    default: {  // kExpand
      Shape twice = x.shape();
      twice.insert(twice.begin() + dim, 2);
      return ops::expand(ops::unsqueeze(x, dim), twice);
    }
  }
}

class Runner {
 public:
  explicit Runner(const TensorList& inputs) {
    for (const Tensor& t : inputs) entries_.push_back({t, Root::kInput});
  }

  void step(const JitStepSpec& s) {
    const double scalar = (static_cast<double>(s.attr % 7) - 3.0) * 0.5;
    const unsigned index = s.op % kNumSteps;
    if (index == kNumSteps - 1) {  // made inside the program; the trace bakes it in
      const Shape shape = s.attr % 2 == 0 ? Shape{2, 3} : Shape{3, 2};
      define(ops::full(shape, scalar), Root::kConstant);
      return;
    }
    auto any = [](const Entry&) { return true; };
    if (index >= kNumOpSteps) {
      const OpId op = kUnaryOps[(index - kNumOpSteps + s.attr) % kUnaryOps.size()];
      define(unaryOnDomain(op, use(pick(s.a, any))));
      return;
    }
    const OpId op = kStepOps[index];
    switch (op) {
      case OpId::kAdd:
      case OpId::kSub:
      case OpId::kMul: {
        Entry* a = pick(s.a, any);
        if (a == nullptr) return;
        const Shape shape = a->t.shape();
        Entry* b = pick(s.b, [&](const Entry& e) { return e.t.shape() == shape; });
        const Tensor x = use(a), y = use(b);
        define(op == OpId::kAdd   ? ops::add(x, y)
               : op == OpId::kSub ? ops::sub(x, y)
                                  : ops::mul(x, y));
        return;
      }
      case OpId::kMulScalar:
        define(ops::mul(use(pick(s.a, any)), scalar));
        return;
      case OpId::kAddScalar:
        define(ops::add(use(pick(s.a, any)), scalar));
        return;
      case OpId::kPowScalar:
        define(ops::pow(use(pick(s.a, any)), 2.0));
        return;
      case OpId::kReshape: {  // a view
        Entry* a = pick(s.a, any);
        const Shape& shape = a->t.shape();
        Shape target = shape.size() == 2 ? Shape{shape[1], shape[0]} : Shape{a->t.numel()};
        if (s.attr % 3 == 0) target = shape;  // the same shape: still a new view
        const Root root = a->root;
        const bool overlapping = a->overlapping;
        define(ops::reshape(use(a), target), root, overlapping);
        return;
      }
      case OpId::kTranspose: {  // a view
        Entry* a = pick(s.a, [](const Entry& e) { return e.t.dim() == 2; });
        if (a == nullptr) return;
        const Root root = a->root;
        const bool overlapping = a->overlapping;
        define(ops::transpose(use(a), 0, 1), root, overlapping);
        return;
      }
      case OpId::kDetach: {  // a view without history
        Entry* a = pick(s.a, any);
        const Root root = a->root;
        const bool overlapping = a->overlapping;
        define(ops::detach(use(a)), root, overlapping);
        return;
      }
      case OpId::kClone:
        define(ops::clone(use(pick(s.a, any))));
        return;
      case OpId::kSum:
        define(ops::sum(use(pick(s.a, any))));
        return;
      case OpId::kSumDim: {
        Entry* a = pick(s.a, [](const Entry& e) { return e.t.dim() >= 1; });
        if (a == nullptr) return;
        const int64_t dim = static_cast<int64_t>(s.attr % a->t.dim());
        define(ops::sum(use(a), dim, s.attr % 2 == 0));
        return;
      }
      case OpId::kMm: {
        Entry* a = pick(s.a, [](const Entry& e) { return e.t.dim() == 2; });
        if (a == nullptr) return;
        const int64_t k = a->t.shape()[1];
        Entry* b = pick(s.b, [&](const Entry& e) { return e.t.dim() == 2 && e.t.shape()[0] == k; });
        if (b == nullptr) return;
        const Tensor x = use(a), y = use(b);
        define(ops::mm(x, y));
        return;
      }
      case OpId::kSelect:
      case OpId::kSlice:
      case OpId::kPermute:
      case OpId::kUnsqueeze:
      case OpId::kExpand: {  // views: in-place steps may write through them
        // A select needs an element along its dim (a step-2 slice of a size-1 dim has none).
        Entry* a = pick(s.a, [op](const Entry& e) {
          return e.t.dim() >= 1 && (op != OpId::kSelect || e.t.numel() > 0);
        });
        if (a == nullptr) return;
        const Root root = a->root;
        const bool overlapping = a->overlapping || op == OpId::kExpand;
        const int64_t dim = static_cast<int64_t>(s.attr % a->t.dim());
        define(strided_view(op, use(a), dim, s.b), root, overlapping);
        return;
      }
      case OpId::kAddInplace:
      case OpId::kMulInplace: {
        Entry* self =
            pick(s.a, [](const Entry& e) { return e.root == Root::kComputed && !e.overlapping; });
        if (self == nullptr) return;
        const Shape shape = self->t.shape();
        // PyTorch refuses an operand that shares some of self's memory in another layout.
        Entry* other = pick(s.b, [&](const Entry& e) {
          return e.t.shape() == shape && !overlaps_partially(e.t, self->t);
        });
        if (other == nullptr) return;
        const Tensor y = use(other);
        // The written tensor is the same Tensor: later steps read the write.
        if (op == OpId::kAddInplace) {
          ops::add_(self->t, y);
        } else {
          ops::mul_(self->t, y);
        }
        self->used = false;  // its new value is not read yet
        return;
      }
      default:  // not a step (the traits table's kJitProgram column)
        return;
    }
  }

  TensorList results() const {
    TensorList out;
    for (size_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      if (e.root == Root::kInput && i < num_inputs_) continue;
      if (!e.used || i + 1 == entries_.size()) out.push_back(e.t);
    }
    // Each tensor once (an in-place op's self may also be the last one).
    TensorList unique;
    for (const Tensor& t : out) {
      if (std::none_of(unique.begin(), unique.end(),
                       [&](const Tensor& u) { return u.is_same(t); })) {
        unique.push_back(t);
      }
    }
    return unique;
  }

  size_t num_inputs_ = 0;

 private:
  Entry* pick(unsigned idx, const std::function<bool(const Entry&)>& ok) {
    for (size_t k = 0; k < entries_.size(); ++k) {
      Entry& e = entries_[(idx + k) % entries_.size()];
      if (ok(e)) return &e;
    }
    return nullptr;
  }
  static Tensor use(Entry* e) {
    e->used = true;
    return e->t;
  }
  void define(Tensor t, Root root = Root::kComputed, bool overlapping = false) {
    entries_.push_back({std::move(t), root, false, overlapping});
  }

  std::vector<Entry> entries_;
};

// A value of [0, n), uniform at any size: rc::gen::inRange alone would draw it at the steps'
// size (24, below), about the first quarter of the range, and leave most ops undrawn. Shrinking
// still goes towards 0.
rc::Gen<unsigned> below(unsigned n) {
  return rc::gen::resize(rc::kNominalSize, rc::gen::inRange(0u, n));
}

}  // namespace

TensorList programInputs(const JitProgramSpec& spec, bool requires_grad) {
  TensorList inputs;
  for (unsigned i = 0; i < std::max(1u, spec.num_inputs); ++i) {
    const Shape shape = i % 2 == 0 ? Shape{2, 3} : Shape{3, 2};
    Tensor t = ops::uniform(shape, -1.5, 1.5, 100 + i);
    if (requires_grad) t.set_requires_grad(true);
    inputs.push_back(t);
  }
  return inputs;
}

TensorList runProgram(const JitProgramSpec& spec, const TensorList& inputs) {
  Runner r(inputs);
  r.num_inputs_ = inputs.size();
  for (const JitStepSpec& s : spec.steps) r.step(s);
  return r.results();
}

rc::Gen<JitProgramSpec> genProgramSpec() {
  auto step = rc::gen::build<JitStepSpec>(
      rc::gen::set(&JitStepSpec::op, below(kNumSteps)), rc::gen::set(&JitStepSpec::a, below(64)),
      rc::gen::set(&JitStepSpec::b, below(64)), rc::gen::set(&JitStepSpec::attr, below(16)));
  return rc::gen::build<JitProgramSpec>(
      rc::gen::set(&JitProgramSpec::num_inputs, rc::gen::inRange(1u, 4u)),
      rc::gen::set(&JitProgramSpec::steps,
                   rc::gen::resize(24, rc::gen::container<std::vector<JitStepSpec>>(step))));
}

Tensor sumOfRequiringGrad(const TensorList& ts) {
  Tensor total;
  for (const Tensor& t : ts) {
    if (t.defined() && t.requires_grad())
      total = total.defined() ? ops::add(total, ops::sum(t)) : ops::sum(t);
  }
  return total;
}

Tensor sumOfSquares(const TensorList& grads) {
  TensorList squares;
  for (const Tensor& g : grads) {
    if (g.defined() && g.requires_grad()) squares.push_back(ops::mul(g, g));
  }
  return sumOfRequiringGrad(squares);
}

void showValue(const JitProgramSpec& spec, std::ostream& os) {
  try {
    auto run = [&](const TensorList& in) { return runProgram(spec, in); };
    os << "\n" << toString(*trace(run, programInputs(spec, false)));
  } catch (const std::exception& e) {
    os << "\n(trace failed: " << e.what() << ")";
  }
}

}  // namespace ag::proptests
