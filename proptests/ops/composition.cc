#include "proptests/ops/composition.h"

#include <algorithm>
#include <sstream>

#include "ops/ops.h"
#include "proptests/fuzz_stats.h"
#include "proptests/op_call.h"

namespace ag::proptests {
namespace {

constexpr int kNumKinds = 39;

// Shape of an instruction's result from its arguments' shapes.
Shape infer(const Instr& in, const std::vector<Shape>& s) {
  auto arg = [&](size_t i) -> const Shape& { return s[in.args[i]]; };
  switch (in.op) {
    case Op::kLeaf:
      return {};  // set by the builder
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
    case Op::kDiv:
    case Op::kPow:
    case Op::kMaximum:
    case Op::kMinimum:
    case Op::kGt:
    case Op::kMaskedFill:
      return broadcast(arg(0), arg(1));
    case Op::kWhere:
      return broadcast(broadcast(arg(0), arg(1)), arg(2));
    case Op::kIndexSelect: {
      Shape out = arg(0);
      out[in.dim0] = static_cast<int64_t>(in.targets.size());
      return out;
    }
    case Op::kGather:
      return in.shape;
    case Op::kCat: {
      Shape out = arg(0);
      out[in.dim0] += arg(1)[in.dim0];
      return out;
    }
    case Op::kStack: {
      Shape out = arg(0);
      out.insert(out.begin() + in.dim0, 2);
      return out;
    }
    case Op::kMaxDim:
    case Op::kMinDim: {
      Shape out = arg(0);
      if (in.keepdim) {
        out[in.dim0] = 1;
      } else {
        out.erase(out.begin() + in.dim0);
      }
      return out;
    }
    case Op::kSum:
    case Op::kMean:
    case Op::kNllLoss:
    case Op::kCrossEntropy:
      return {};
    case Op::kSumDim:
    case Op::kMeanDim: {
      Shape out = arg(0);
      const int64_t d = in.dim0 < 0 ? in.dim0 + static_cast<int64_t>(out.size()) : in.dim0;
      if (in.keepdim) {
        out[d] = 1;
      } else {
        out.erase(out.begin() + d);
      }
      return out;
    }
    case Op::kSumTo:
    case Op::kBroadcastTo:
      return in.shape;
    case Op::kReshape: {  // resolve a -1
      Shape out = in.shape;
      int64_t known = 1;
      for (int64_t d : out) known *= d == -1 ? 1 : d;
      for (int64_t& d : out) d = d == -1 ? ag::numel(arg(0)) / known : d;
      return out;
    }
    case Op::kTranspose: {
      Shape out = arg(0);
      std::swap(out[in.dim0], out[in.dim1]);
      return out;
    }
    case Op::kMm:
      return {arg(0)[0], arg(1)[1]};
    case Op::kAddmm:
      return {arg(1)[0], arg(2)[1]};
    case Op::kLinear: {
      Shape out = arg(0);
      out.back() = arg(1)[0];
      return out;
    }
    case Op::kBmm:
      return {arg(0)[0], arg(0)[1], arg(1)[2]};
    case Op::kMatmul: {
      Shape a = arg(0), b = arg(1);
      if (b.size() == 1) {
        a.pop_back();
        return a;
      }
      Shape ba(a.begin(), a.end() - std::min<size_t>(a.size(), 2));
      Shape bb(b.begin(), b.end() - 2);
      Shape out = broadcast(ba, bb);
      if (a.size() >= 2) out.push_back(a[a.size() - 2]);
      out.push_back(b.back());
      return out;
    }
    default:  // elementwise unary, log_softmax, softmax, cumsum, clamp, dropout, clone
      return arg(0);
  }
}

class Builder {
 public:
  explicit Builder(Plan& plan) : plan_(plan) {}

  int leaf(const Shape& shape, bool requires_grad) {
    Instr in;
    in.args = {static_cast<int>(plan_.leaf_shapes.size())};
    plan_.leaf_shapes.push_back(shape);
    plan_.leaf_requires_grad.push_back(requires_grad);
    plan_.instrs.push_back(in);
    plan_.shapes.push_back(shape);
    return last();
  }
  int emit(Instr in) {
    plan_.shapes.push_back(infer(in, plan_.shapes));
    plan_.instrs.push_back(std::move(in));
    return last();
  }
  int op(Op op, std::vector<int> args, double scalar = 0) {
    Instr in;
    in.op = op;
    in.args = std::move(args);
    in.scalar = scalar;
    return emit(in);
  }
  int reshape(int v, Shape shape) {
    Instr in;
    in.op = Op::kReshape;
    in.args = {v};
    in.shape = std::move(shape);
    return emit(in);
  }
  const Shape& shape(int v) const { return plan_.shapes[v]; }
  int rank(int v) const { return static_cast<int>(shape(v).size()); }
  int64_t numel(int v) const { return ag::numel(shape(v)); }
  int last() const { return static_cast<int>(plan_.instrs.size()) - 1; }

  // Adapters; each is a printed op of the plan.
  int positive(int v) { return op(Op::kAddScalar, {op(Op::kSigmoid, {v})}, 0.5); }
  int fit(int a, int b) { return broadcastable(shape(a), shape(b)) ? b : op(Op::kSum, {b}); }
  int at_least_1d(int v) { return rank(v) == 0 ? reshape(v, {1}) : v; }
  int as_2d(int v) {
    if (rank(v) == 2) return v;
    if (rank(v) < 2) return reshape(v, {1, numel(v)});
    return reshape(v, {-1, shape(v).back()});
  }

 private:
  Plan& plan_;
};

void add_step(Builder& b, const Step& step, int index) {
  const int n = b.last() + 1;
  const int x = step.a % n, y = step.b % n, p = step.param;
  const int kind = step.kind % kNumKinds;
  auto scalar_of = [&](std::initializer_list<double> options) {
    return options.begin()[p % options.size()];
  };
  switch (kind) {
    case 0:
      b.op(Op::kAdd, {x, b.fit(x, y)});
      return;
    case 1:
      b.op(Op::kSub, {x, b.fit(x, y)});
      return;
    case 2:
      b.op(Op::kMul, {x, b.fit(x, y)});
      return;
    case 3:
      b.op(Op::kDiv, {x, b.positive(b.fit(x, y))});
      return;
    case 4:
      b.op(Op::kPow, {b.positive(x), b.fit(x, y)});
      return;
    case 5:
      b.op(Op::kAddScalar, {x}, scalar_of({-1.5, -0.5, 0.5, 1.5}));
      return;
    case 6:
      b.op(Op::kMulScalar, {x}, scalar_of({-2, -0.5, 0.5, 2}));
      return;
    case 7:
      if (p % 4 < 2)
        b.op(Op::kPowScalar, {x}, p % 4 == 0 ? 2.0 : 3.0);
      else
        b.op(Op::kPowScalar, {b.positive(x)}, p % 4 == 2 ? 0.5 : -1.5);
      return;
    case 8:
    case 9:
    case 10:
    case 11:
    case 12:
    case 13: {  // an elementwise unary op of the traits table, on an input of its domain
      constexpr auto& unary = unary_ops<kComposition>;
      const ops::OpId op = unary[(kind - 8 + p) % unary.size()];
      switch (traits(op).domain) {
        case Domain::kAny:
          b.op(op_of(op), {x});
          return;
        case Domain::kPositive:
          b.op(op_of(op), {b.positive(x)});
          return;
        case Domain::kBounded:  // no overflow in chains
          b.op(op_of(op), {b.op(Op::kTanh, {x})});
          return;
      }
      return;
    }
    case 14:
      b.op(Op::kSum, {x});
      return;
    case 15:
    case 17: {
      if (b.rank(x) == 0) {
        b.op(kind == 15 ? Op::kSum : Op::kMean, {x});
        return;
      }
      Instr in;
      in.op = kind == 15 ? Op::kSumDim : Op::kMeanDim;
      in.args = {x};
      in.dim0 = p % b.rank(x) - ((p / 2) % 2 ? b.rank(x) : 0);  // sometimes negative
      in.keepdim = (p / 4) % 2;
      b.emit(in);
      return;
    }
    case 16:
      b.op(Op::kMean, {x});
      return;
    case 18: {  // sum_to a shape x broadcasts from
      Instr in;
      in.op = Op::kSumTo;
      in.args = {x};
      in.shape = b.shape(x);
      for (size_t d = 0; d < in.shape.size(); ++d) {
        if (p >> d & 1) in.shape[d] = 1;
      }
      if ((p >> 3 & 1) && !in.shape.empty()) in.shape.erase(in.shape.begin());
      b.emit(in);
      return;
    }
    case 19: {  // broadcast_to: 1-dims grow to 2, maybe one new leading dim
      Instr in;
      in.op = Op::kBroadcastTo;
      in.args = {x};
      in.shape = b.shape(x);
      for (size_t d = 0; d < in.shape.size(); ++d) {
        if ((p >> d & 1) && in.shape[d] == 1) in.shape[d] = 2;
      }
      if ((p >> 3 & 1) && in.shape.size() < 4) in.shape.insert(in.shape.begin(), 2);
      b.emit(in);
      return;
    }
    case 20: {
      const int flat = b.reshape(x, {-1});
      if (p % 2 == 0) b.reshape(flat, b.shape(x));
      return;
    }
    case 21: {
      const int v = b.rank(x) < 2 ? b.as_2d(x) : x;
      Instr in;
      in.op = Op::kTranspose;
      in.args = {v};
      in.dim0 = p % b.rank(v);
      in.dim1 = (in.dim0 + 1 + (p / 4) % (b.rank(v) - 1)) % b.rank(v);
      b.emit(in);
      return;
    }
    case 22: {  // matrix products with fresh weight leaves
      const int64_t n_out = 1 + (p / 5) % 3;
      const bool w_grad = (p / 15) % 2 == 0;
      switch (p % 5) {
        case 0: {
          const int a = b.as_2d(x);
          b.op(Op::kMm, {a, b.leaf({b.shape(a)[1], n_out}, w_grad)});
          return;
        }
        case 1: {
          const int a = b.as_2d(x);
          const int64_t m = b.shape(a)[0], k = b.shape(a)[1];
          const Shape bias_shapes[] = {{n_out}, {1, n_out}, {m, n_out}};
          const int bias = b.leaf(bias_shapes[(p / 30) % 3], true);
          b.op(Op::kAddmm, {bias, a, b.leaf({k, n_out}, w_grad)});
          return;
        }
        case 2: {
          const int a = b.at_least_1d(x);
          const int64_t k = b.shape(a).back();
          const int w = b.leaf({n_out, k}, w_grad);
          if ((p / 30) % 2)
            b.op(Op::kLinear, {a, w});
          else
            b.op(Op::kLinear, {a, w, b.leaf({n_out}, true)});
          return;
        }
        case 3: {
          int a = x;
          if (b.rank(x) != 3) {
            const int a2 = b.as_2d(x);
            a = b.reshape(a2, {1, -1, b.shape(a2)[1]});
          }
          b.op(Op::kBmm, {a, b.leaf({b.shape(a)[0], b.shape(a)[2], n_out}, w_grad)});
          return;
        }
        default: {
          const int a = b.at_least_1d(x);
          const int64_t k = b.shape(a).back();
          // A batched weight broadcasts against a's batch dim (or adds one).
          const int64_t batch = b.rank(a) >= 3 && b.shape(a)[0] != 1 ? b.shape(a)[0] : 2;
          const Shape w_shapes[] = {{k}, {k, n_out}, {batch, k, n_out}};
          b.op(Op::kMatmul, {a, b.leaf(w_shapes[(p / 30) % 3], w_grad)});
          return;
        }
      }
    }
    case 23: {
      const int a = b.at_least_1d(x);
      Instr in;
      in.op = Op::kLogSoftmax;
      in.args = {a};
      in.dim0 = p % b.rank(a);
      b.emit(in);
      return;
    }
    case 24: {
      const int a = b.as_2d(x);
      Instr in;
      in.op = p % 2 ? Op::kCrossEntropy : Op::kNllLoss;
      const int64_t rows = b.shape(a)[0], classes = b.shape(a)[1];
      for (int64_t i = 0; i < rows; ++i) in.targets.push_back((p * 7 + i * 3) % classes);
      if (in.op == Op::kNllLoss) {
        Instr ls;
        ls.op = Op::kLogSoftmax;
        ls.args = {a};
        ls.dim0 = 1;
        in.args = {b.emit(ls)};
      } else {
        in.args = {a};
      }
      b.emit(in);
      return;
    }
    case 25:
    case 26: {
      Instr in;
      in.op = kind == 25 ? Op::kDropout : Op::kDropout2d;
      in.args = {kind == 25 || b.rank(x) >= 2 ? x : b.as_2d(x)};
      in.scalar = scalar_of({0.25, 0.5, 0.75});
      in.seed = static_cast<uint64_t>(index);
      b.emit(in);
      return;
    }
    case 27:
      b.op(Op::kClone, {x});
      return;
    case 28:  // ties where both operands are one value
      b.op(p % 2 ? Op::kMinimum : Op::kMaximum, {x, b.fit(x, y)});
      return;
    case 29: {  // bounds inside the leaves' range [-1, 1]
      Instr in;
      in.op = p % 3 == 0 ? Op::kClamp : p % 3 == 1 ? Op::kClampMin : Op::kClampMax;
      in.args = {x};
      in.scalar = scalar_of({-0.5, 0.0, 0.25});
      in.max = in.scalar + 0.5;
      if (in.op == Op::kClampMax) in.scalar = in.max;
      b.emit(in);
      return;
    }
    case 30: {  // where(x > y, x, y) or where(x > y, y, x): maximum or minimum, continuous
      const int other = b.fit(x, y);
      const int cond = b.op(Op::kGt, {x, other});
      b.op(Op::kWhere, p % 2 ? std::vector<int>{cond, other, x} : std::vector<int>{cond, x, other});
      return;
    }
    case 31:
      b.op(Op::kMaskedFill, {x, b.op(Op::kGt, {x, b.fit(x, y)})}, scalar_of({-0.5, 0.0, 1.0}));
      return;
    case 34:
    case 35:
    case 36: {  // indices that repeat, so that gradients add up
      const int a = b.at_least_1d(x);
      Instr in;
      in.op = kind == 34 ? Op::kIndexSelect : kind == 35 ? Op::kGather : Op::kScatterAdd;
      in.dim0 = p % b.rank(a);
      const int64_t size = b.shape(a)[in.dim0];
      in.shape = b.shape(a);  // the index's shape: gather's any length along dim, no longer else
      if (in.op == Op::kGather) in.shape[in.dim0] = 1 + (p / 4) % 3;
      const int64_t n = in.op == Op::kIndexSelect ? 1 + (p / 4) % 3 : ag::numel(in.shape);
      for (int64_t i = 0; i < n; ++i) in.targets.push_back((p * 7 + i * 3) % size);
      if (in.op == Op::kIndexSelect) in.shape = {n};
      in.args = {a};
      if (in.op == Op::kScatterAdd) in.args.push_back(b.leaf(in.shape, true));
      b.emit(in);
      return;
    }
    case 37: {
      const int a = b.at_least_1d(x);
      Instr in;
      in.op = p % 2 ? Op::kMinDim : Op::kMaxDim;
      in.args = {a};
      in.dim0 = (p / 2) % b.rank(a);
      in.keepdim = (p / 8) % 2;
      b.emit(in);
      return;
    }
    case 38: {  // x beside sin(x): two inputs of one shape, gradients from both slices
      const int a = b.at_least_1d(x);
      Instr in;
      in.op = p % 2 ? Op::kStack : Op::kCat;
      in.args = {a, b.op(Op::kSin, {a})};
      in.dim0 = (p / 2) % (b.rank(a) + (in.op == Op::kStack ? 1 : 0));
      b.emit(in);
      return;
    }
    case 32:
    default: {
      const int a = b.at_least_1d(x);
      Instr in;
      in.op = kind == 32 ? Op::kSoftmax : Op::kCumsum;
      in.args = {a};
      in.dim0 = p % b.rank(a) - ((p / 4) % 2 ? b.rank(a) : 0);  // sometimes negative
      b.emit(in);
      return;
    }
  }
}

}  // namespace

bool broadcastable(const Shape& x, const Shape& y) {
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    const int64_t dx = x[x.size() - 1 - i], dy = y[y.size() - 1 - i];
    if (dx != dy && dx != 1 && dy != 1) return false;
  }
  return true;
}

Shape broadcast(const Shape& x, const Shape& y) {
  Shape out(std::max(x.size(), y.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t dx = i < x.size() ? x[x.size() - 1 - i] : 1;
    const int64_t dy = i < y.size() ? y[y.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = dx == 1 ? dy : dx;
  }
  return out;
}

Plan build_plan(const CompositionSpec& program) {
  Plan plan;
  plan.seed = program.seed;
  Builder b(plan);
  Shape base;
  for (int d : program.base_dims) base.push_back(1 + d % 3);
  for (const LeafSpec& l : program.leaves) {
    Shape s(base.begin() + std::min<size_t>(l.drop, base.size()), base.end());
    for (size_t d = 0; d < s.size(); ++d) {
      if (l.ones_mask >> d & 1) s[d] = 1;
    }
    b.leaf(s, l.requires_grad);
  }
  for (size_t i = 0; i < program.steps.size(); ++i) {
    add_step(b, program.steps[i], static_cast<int>(i));
  }
  return plan;
}

void append_step(Plan& plan, const Step& step, int index) {
  Builder b(plan);
  add_step(b, step, index);
}

const char* op_name(Op op) { return op == Op::kLeaf ? "leaf" : ops::op_name(op_id(op)); }

std::string describe(const Plan& plan) {
  std::ostringstream os;
  for (size_t i = 0; i < plan.instrs.size(); ++i) {
    const Instr& in = plan.instrs[i];
    os << "  v" << i << " = ";
    if (in.op == Op::kLeaf) {
      os << "leaf" << to_string(plan.shapes[i])
         << (plan.leaf_requires_grad[in.args[0]] ? " requires_grad" : "") << "\n";
      continue;
    }
    os << op_name(in.op) << "(";
    for (size_t k = 0; k < in.args.size(); ++k) os << (k ? ", v" : "v") << in.args[k];
    switch (in.op) {
      case Op::kAddScalar:
      case Op::kMulScalar:
      case Op::kPowScalar:
        os << ", " << in.scalar;
        break;
      case Op::kSumDim:
      case Op::kMeanDim:
        os << ", dim=" << in.dim0 << ", keepdim=" << in.keepdim;
        break;
      case Op::kLogSoftmax:
      case Op::kSoftmax:
      case Op::kCumsum:
        os << ", dim=" << in.dim0;
        break;
      case Op::kClampMin:
      case Op::kClampMax:
      case Op::kMaskedFill:
        os << ", " << in.scalar;
        break;
      case Op::kClamp:
        os << ", " << in.scalar << ", " << in.max;
        break;
      case Op::kIndexSelect:
      case Op::kGather:
      case Op::kScatterAdd:
        os << ", dim=" << in.dim0 << ", index" << to_string(in.shape) << "="
           << to_string(in.targets);
        break;
      case Op::kMaxDim:
      case Op::kMinDim:
        os << ", dim=" << in.dim0 << ", keepdim=" << in.keepdim;
        break;
      case Op::kCat:
      case Op::kStack:
        os << ", dim=" << in.dim0;
        break;
      case Op::kTranspose:
        os << ", " << in.dim0 << ", " << in.dim1;
        break;
      case Op::kSumTo:
      case Op::kBroadcastTo:
      case Op::kReshape:
        os << ", " << to_string(in.shape);
        break;
      case Op::kNllLoss:
      case Op::kCrossEntropy:
        os << ", targets=" << to_string(in.targets);
        break;
      case Op::kDropout:
      case Op::kDropout2d:
        os << ", p=" << in.scalar << ", seed=" << in.seed;
        break;
      default:
        break;
    }
    os << ") : " << to_string(plan.shapes[i]) << "\n";
  }
  os << "  (leaf values: uniform(-1, 1) with seed " << plan.seed << ")\n";
  return os.str();
}

TensorList make_leaves(const Plan& plan, DType dtype) {
  TensorList leaves;
  for (size_t i = 0; i < plan.leaf_shapes.size(); ++i) {
    Tensor t = ops::uniform(plan.leaf_shapes[i], -1, 1, plan.seed * 1000 + i, dtype);
    leaves.push_back(t.set_requires_grad(plan.leaf_requires_grad[i]));
  }
  return leaves;
}

Tensor run_instr(const Instr& in, const TensorList& v) {
  switch (in.op) {
    case Op::kLeaf:
      return v[0];
    case Op::kAdd:
      return ops::add(v[0], v[1]);
    case Op::kSub:
      return ops::sub(v[0], v[1]);
    case Op::kMul:
      return ops::mul(v[0], v[1]);
    case Op::kDiv:
      return ops::div(v[0], v[1]);
    case Op::kPow:
      return ops::pow(v[0], v[1]);
    case Op::kAddScalar:
      return ops::add(v[0], in.scalar);
    case Op::kMulScalar:
      return ops::mul(v[0], in.scalar);
    case Op::kPowScalar:
      return ops::pow(v[0], in.scalar);
    case Op::kSum:
      return ops::sum(v[0]);
    case Op::kSumDim:
      return ops::sum(v[0], in.dim0, in.keepdim);
    case Op::kMean:
      return ops::mean(v[0]);
    case Op::kMeanDim:
      return ops::mean(v[0], in.dim0, in.keepdim);
    case Op::kSumTo:
      return ops::sum_to(v[0], in.shape);
    case Op::kBroadcastTo:
      return ops::broadcast_to(v[0], in.shape);
    case Op::kReshape:
      return ops::reshape(v[0], in.shape);
    case Op::kTranspose:
      return ops::transpose(v[0], in.dim0, in.dim1);
    case Op::kMm:
      return ops::mm(v[0], v[1]);
    case Op::kAddmm:
      return ops::addmm(v[0], v[1], v[2]);
    case Op::kLinear:
      return ops::linear(v[0], v[1], v.size() > 2 ? v[2] : Tensor());
    case Op::kBmm:
      return ops::bmm(v[0], v[1]);
    case Op::kMatmul:
      return ops::matmul(v[0], v[1]);
    case Op::kLogSoftmax:
      return ops::log_softmax(v[0], in.dim0);
    case Op::kNllLoss:
      return ops::nll_loss(v[0], in.targets);
    case Op::kCrossEntropy:
      return ops::cross_entropy(v[0], in.targets);
    case Op::kDropout:
      return ops::dropout(v[0], in.scalar, true, in.seed);
    case Op::kDropout2d:
      return ops::dropout2d(v[0], in.scalar, true, in.seed);
    case Op::kClone:
      return ops::clone(v[0]);
    case Op::kMaximum:
      return ops::maximum(v[0], v[1]);
    case Op::kMinimum:
      return ops::minimum(v[0], v[1]);
    case Op::kGt:
      return ops::gt(v[0], v[1]);
    case Op::kClamp:
      return ops::clamp(v[0], in.scalar, in.max);
    case Op::kClampMin:
      return ops::clamp_min(v[0], in.scalar);
    case Op::kClampMax:
      return ops::clamp_max(v[0], in.scalar);
    case Op::kWhere:
      return ops::where(v[0], v[1], v[2]);
    case Op::kMaskedFill:
      return ops::masked_fill(v[0], v[1], in.scalar);
    case Op::kSoftmax:
      return ops::softmax(v[0], in.dim0);
    case Op::kCumsum:
      return ops::cumsum(v[0], in.dim0);
    case Op::kIndexSelect:
      return ops::index_select(v[0], in.dim0, in.targets);
    case Op::kGather:
      return ops::gather(v[0], in.dim0, ops::Index{in.shape, in.targets});
    case Op::kScatterAdd:
      return ops::scatter_add(v[0], in.dim0, ops::Index{in.shape, in.targets}, v[1]);
    case Op::kCat:
      return ops::cat(v, in.dim0);
    case Op::kStack:
      return ops::stack(v, in.dim0);
    case Op::kMaxDim:
      return ops::max(v[0], in.dim0, in.keepdim).values;
    case Op::kMinDim:
      return ops::min(v[0], in.dim0, in.keepdim).values;
    default:
      if (traits(op_id(in.op)).unary_elementwise()) return call_unary(op_id(in.op), v[0]);
      break;  // not generated (the traits table, Note [Op traits])
  }
  throw std::logic_error(std::string("run_instr: ") + op_name(in.op) + " is not generated");
}

TensorList run(const Plan& plan, const TensorList& leaves) {
  TensorList values;
  for (const Instr& in : plan.instrs) {
    TensorList args;
    if (in.op == Op::kLeaf) {
      args.push_back(leaves[in.args[0]]);
    } else {
      for (int a : in.args) args.push_back(values[a]);
    }
    values.push_back(run_instr(in, args));
  }
  return values;
}

rc::Gen<CompositionSpec> program_gen() {
  return rc::gen::exec([] {
    CompositionSpec p;
    p.base_dims =
        *rc::gen::container<std::vector<int>>(*rc::gen::inRange(0, 4), rc::gen::inRange(0, 3));
    const int num_leaves = *rc::gen::inRange(1, 4);
    for (int i = 0; i < num_leaves; ++i) {
      LeafSpec l;
      l.ones_mask = *rc::gen::inRange(0, 8);
      l.drop = *rc::gen::inRange(0, 4);
      l.requires_grad = i == 0 || *rc::gen::arbitrary<bool>();  // leaf 0 always: something to check
      p.leaves.push_back(l);
    }
    const int num_steps = *rc::gen::inRange(1, 10);
    for (int i = 0; i < num_steps; ++i) {
      Step s;
      s.kind = *rc::gen::inRange(0, kNumKinds);
      s.a = *rc::gen::inRange(0, 16);
      s.b = *rc::gen::inRange(0, 16);
      s.param = *rc::gen::inRange(0, 64);
      p.steps.push_back(s);
    }
    p.seed = *rc::gen::inRange<uint64_t>(0, 1000);
    return p;
  });
}

void showValue(const CompositionSpec& program, std::ostream& os) {
  os << "\n" << describe(build_plan(program));
}

Plan pick_plan() {
  Plan plan = build_plan(*program_gen());
  ag::proptests::fuzz_stats().record_graph("ops", static_cast<int64_t>(plan.instrs.size()));
  for (const Instr& instr : plan.instrs) {
    if (instr.op != Op::kLeaf) ag::proptests::fuzz_stats().record("op", op_name(instr.op));
  }
  return plan;
}

}  // namespace ag::proptests
