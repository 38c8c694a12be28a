// Commands that make and write tensors: leaves, ops, views, aliases, in-place ops, custom
// Functions.
#include <algorithm>
#include <cmath>
#include <optional>

#include "engine/grad_mode.h"
#include "ops/ops.h"
#include "proptests/api_model/command_gens.h"
#include "proptests/api_model/command_util.h"
#include "proptests/api_model/custom_functions.h"
#include "proptests/op_call.h"

namespace ag::proptests {
namespace {

Shape to_shape(const Dims& d) { return Shape(d.begin(), d.end()); }

// ---- leaves ----------------------------------------------------------------------------------

// Small shapes, often related to one already held (equal, broadcastable, or one that multiplies
// with it), with size-1 and sometimes zero-size dims.
Dims gen_shape(const Model& m) {
  auto dim = [] { return *rc::gen::weightedElement<int64_t>({{3, 1}, {4, 2}, {3, 3}, {1, 0}}); };
  const int other = pick_any(m);
  const int mode = other < 0 ? 0 : *rc::gen::weightedElement<int>({{3, 0}, {3, 1}, {2, 2}, {2, 3}});
  Dims shape;
  if (mode == 1) {
    shape = m.shape(other);
  } else if (mode == 2) {  // broadcasts with `other`: some dims 1, maybe fewer leading dims
    shape = m.shape(other);
    if (!shape.empty() && *rc::gen::inRange(0, 3) == 0) shape.erase(shape.begin());
    for (int64_t& d : shape) {
      if (*rc::gen::inRange(0, 5) < 2) d = 1;
    }
  } else if (mode == 3 && !m.shape(other).empty()) {  // multiplies with `other`
    const Dims& s = m.shape(other);
    const int64_t k = s.back(), n = dim();
    switch (*rc::gen::inRange(0, 4)) {
      case 0:
        shape = {k};
        break;
      case 1:
        shape = {k, n};
        break;
      case 2:
        shape = {n, k};
        break;  // a linear weight
      default:
        shape = Dims(s.begin(), s.end() - std::min<size_t>(s.size(), 2));
        shape.push_back(k);
        shape.push_back(n);
    }
  } else {
    const int rank = *rc::gen::weightedElement<int>({{1, 0}, {3, 1}, {3, 2}, {2, 3}});
    for (int i = 0; i < rank; ++i) shape.push_back(dim());
  }
  if (count(shape) > 12) shape = {dim(), dim()};
  return shape;
}

class MakeLeaf final : public ApiCommand {
 public:
  explicit MakeLeaf(const Model& m) : name_(m.next_name()), shape_(gen_shape(m)) {
    for (int64_t i = 0; i < count(shape_); ++i) values_.push_back(*rc::gen::inRange(-16, 17) / 8.0);
    requires_grad_ = *rc::gen::weightedElement<bool>({{3, true}, {1, false}});
  }
  void checkPreconditions(const Model& m) const override { RC_PRE(fresh(m, name_)); }
  Outcome step(Model& m) const override { return m.leaf(name_, shape_, values_, requires_grad_); }
  void exec(Sut& sut, const Model&) const override {
    Tensor t = ops::from_vector(values_, to_shape(shape_), DType::kFloat64);
    t.set_requires_grad(requires_grad_);
    sut.tensors[name_] = t;
  }
  std::string text() const override {
    std::string v = "[";
    for (size_t i = 0; i < values_.size(); ++i) v += (i ? ", " : "") + num(values_[i]);
    return tname(name_) + " = leaf(" + dims_py(shape_) + ", " + v +
           "], requires_grad=" + (requires_grad_ ? "True" : "False") + ")";
  }

 private:
  int name_;
  Dims shape_;
  std::vector<double> values_;
  bool requires_grad_;
};

// ---- out-of-place ops ------------------------------------------------------------------------

enum Product { kMatmul = 0, kMm = 1, kBmm = 2, kLinearNoBias = 3, kLinearBias = 4 };

class OpCall final : public ApiCommand {
 public:
  OpCall(int name, OpKind kind, OpAttrs attrs, std::vector<int> operands)
      : name_(name), kind_(kind), attrs_(std::move(attrs)), operands_(std::move(operands)) {}

  void checkPreconditions(const Model& m) const override {
    RC_PRE(fresh(m, name_));
    for (int o : operands_) RC_PRE(m.has(o));
    const Dims& s = m.shape(operands_[0]);
    const int64_t rank = static_cast<int64_t>(s.size());
    const proptests::OpTraits* unary = unary_traits(kind_);
    if (unary != nullptr && unary->domain == proptests::Domain::kPositive) {
      RC_PRE(all_values(m, operands_[0], [](double v) { return v >= 0.25; }));
    }
    switch (kind_) {
      case OpKind::kSumDim:
      case OpKind::kMeanDim:
        RC_PRE(attrs_.dim0 < rank);
        RC_PRE((kind_ == OpKind::kSumDim || s[attrs_.dim0] > 0));
        break;
      case OpKind::kMean:
        RC_PRE(count(s) > 0);  // the engine raises where PyTorch returns nan (README.md)
        break;
      case OpKind::kDiv:
        RC_PRE(all_values(m, operands_[1], [](double v) { return std::abs(v) >= 0.25; }));
        break;
      case OpKind::kPowScalar:
        if (attrs_.scalar == 0.5) {
          RC_PRE(all_values(m, operands_[0], [](double v) { return v >= 0.25; }));
        }
        if (attrs_.scalar < 0) {
          RC_PRE(all_values(m, operands_[0], [](double v) { return std::abs(v) >= 0.25; }));
        }
        break;
      default:
        break;
    }
    // Keep values moderate (invalid shapes give nothing to look at: the call must raise).
    for (const Val<double>& v : m.preview(kind_, attrs_, operands_)) {
      RC_PRE((tame(v.v) && count(v.shape) <= 48));
    }
  }
  Outcome step(Model& m) const override { return m.op(name_, kind_, attrs_, operands_); }
  void exec(Sut& sut, const Model&) const override {
    std::vector<Tensor> in;
    for (int o : operands_) in.push_back(sut.tensors.at(o));
    sut.tensors[name_] = compute(in);
  }
  std::string text() const override;

 private:
  Tensor compute(const std::vector<Tensor>& in) const;

  int name_;
  OpKind kind_;
  OpAttrs attrs_;
  std::vector<int> operands_;
};

Tensor OpCall::compute(const std::vector<Tensor>& in) const {
  if (unary_traits(kind_) != nullptr) {  // by its name (Note [Op traits])
    return proptests::call_unary(unary_traits(kind_)->op, in[0]);
  }
  switch (kind_) {
    case OpKind::kAdd:
      return ops::add(in[0], in[1]);
    case OpKind::kSub:
      return ops::sub(in[0], in[1]);
    case OpKind::kMul:
      return ops::mul(in[0], in[1]);
    case OpKind::kDiv:
      return ops::div(in[0], in[1]);
    case OpKind::kAddScalar:
      return ops::add(in[0], attrs_.scalar);
    case OpKind::kMulScalar:
      return ops::mul(in[0], attrs_.scalar);
    case OpKind::kPowScalar:
      return ops::pow(in[0], attrs_.scalar);
    case OpKind::kSum:
      return ops::sum(in[0]);
    case OpKind::kSumDim:
      return ops::sum(in[0], attrs_.dim0, attrs_.keepdim);
    case OpKind::kMean:
      return ops::mean(in[0]);
    case OpKind::kMeanDim:
      return ops::mean(in[0], attrs_.dim0, attrs_.keepdim);
    case OpKind::kClone:
      return ops::clone(in[0]);
    case OpKind::kMatmul:
      if (attrs_.dim0 == kMm) return ops::mm(in[0], in[1]);
      if (attrs_.dim0 == kBmm) return ops::bmm(in[0], in[1]);
      return ops::matmul(in[0], in[1]);
    case OpKind::kLinear:
      return ops::linear(in[0], in[1], in.size() > 2 ? in[2] : Tensor());
    default:
      throw std::logic_error("OpCall: not an out-of-place op");
  }
}

std::string OpCall::text() const {
  const std::string out = tname(name_) + " = ";
  const std::string x = tname(operands_[0]);
  const std::string y = operands_.size() > 1 ? tname(operands_[1]) : "";
  const std::string kd = attrs_.keepdim ? ", keepdim=True)" : ")";
  switch (kind_) {
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
      return out + "torch." + op_name(kind_) + "(" + x + ", " + y + ")";
    case OpKind::kAddScalar:
    case OpKind::kPowScalar:
      return out + "torch." + op_name(kind_) + "(" + x + ", " + num(attrs_.scalar) + ")";
    case OpKind::kSumDim:
    case OpKind::kMeanDim:
      return out + x + "." + op_name(kind_) + "(" + std::to_string(attrs_.dim0) + kd;
    case OpKind::kSum:
    case OpKind::kMean:
    case OpKind::kClone:
      return out + x + "." + op_name(kind_) + "()";
    case OpKind::kMulScalar:  // see replay_prelude.py
      return out + "mul_scalar(" + x + ", " + num(attrs_.scalar) + ")";
    case OpKind::kMatmul: {
      const char* f = attrs_.dim0 == kMm ? "mm" : attrs_.dim0 == kBmm ? "bmm" : "matmul";
      return out + "torch." + f + "(" + x + ", " + y + ")";
    }
    case OpKind::kLinear:
      return out + "F.linear(" + x + ", " + y +
             (operands_.size() > 2 ? ", " + tname(operands_[2]) : "") + ")";
    default: {  // an elementwise unary op: its row's PyTorch spelling (Note [Op traits])
      const proptests::OpTraits* unary = unary_traits(kind_);
      return out + (unary ? unary->torch : std::string("torch.") + op_name(kind_)) + "(" + x + ")";
    }
  }
}

bool broadcastable(const Model& m, int a, int b) {
  Dims out;
  return broadcast_dims(m.shape(a), m.shape(b), &out);
}

// A partner for `a` satisfying `ok` most of the time; any tensor now and then (the call must
// then raise).
int partner(const Model& m, const std::function<bool(int)>& ok) {
  if (*rc::gen::inRange(0, 100) < 8) return pick_any(m);
  return pick(m, ok);
}

}  // namespace

CommandPtr make_op(const Model& m) {
  // Now and then a view whose grad_fn cannot be read (Note [Model view kinds]): it must raise.
  int x = *rc::gen::inRange(0, 12) == 0 ? pick_unreadable(m) : -1;
  if (x < 0 && m.dual_live() && *rc::gen::inRange(0, 2) == 0) {  // often a dual, in a level
    x = pick(m, [&](int n) { return m.tangent_kind(n) == Tangent::kKnown; });
  }
  if (x < 0) x = pick_any(m);
  if (x < 0) return nullptr;
  const int name = m.next_name();
  const Dims& s = m.shape(x);
  const int64_t rank = static_cast<int64_t>(s.size());
  OpAttrs attrs;
  auto one = [&](OpKind kind, std::vector<int> operands) {
    return std::make_shared<OpCall>(name, kind, attrs, std::move(operands));
  };
  switch (*rc::gen::weightedElement<int>({{6, 0}, {10, 1}, {4, 2}, {8, 3}, {6, 5}, {2, 6}})) {
    case 0: {  // an elementwise unary op of the traits table (Note [Op traits])
      constexpr auto& unary = proptests::unary_ops<proptests::kApiModel>;
      const ops::OpId op = unary[*rc::gen::inRange(0, unary.size())];
      return one(static_cast<OpKind>(static_cast<int>(op) + 1), {x});
    }
    case 1: {
      const int y = partner(m, [&](int b) { return broadcastable(m, x, b); });
      if (y < 0) return nullptr;
      return one(*rc::gen::element(OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv), {x, y});
    }
    case 2: {
      const OpKind kind =
          *rc::gen::element(OpKind::kAddScalar, OpKind::kMulScalar, OpKind::kPowScalar);
      attrs.scalar = kind == OpKind::kPowScalar ? *rc::gen::element(2.0, 3.0, 0.0, 1.0, 0.5, -1.0)
                                                : *rc::gen::element(0.5, -1.5, 2.0, 0.0);
      return one(kind, {x});
    }
    case 3: {
      if (rank == 0 || *rc::gen::inRange(0, 3) == 0) {
        return one(*rc::gen::element(OpKind::kSum, OpKind::kSum, OpKind::kMean), {x});
      }
      attrs.dim0 = *rc::gen::inRange<int64_t>(0, rank);
      attrs.keepdim = *rc::gen::arbitrary<bool>();
      return one(*rc::gen::element(OpKind::kSumDim, OpKind::kMeanDim), {x});
    }
    case 5: {
      const int variant = *rc::gen::weightedElement<int>(
          {{4, kMatmul}, {2, kMm}, {1, kBmm}, {2, kLinearNoBias}, {2, kLinearBias}});
      attrs.dim0 = variant;
      Dims out;
      auto fits = [&](int b) {
        const Dims& t = m.shape(b);
        switch (variant) {
          case kMatmul:
            return matmul_dims(s, t, &out);
          case kMm:
            return rank == 2 && t.size() == 2 && s[1] == t[0];
          case kBmm:
            return rank == 3 && t.size() == 3 && s[0] == t[0] && s[2] == t[1];
          default:
            return rank >= 1 && t.size() == 2 && t[1] == s.back();
        }
      };
      // A linear weight is 2-D (PyTorch also takes a 1-D one; the engine does not: README.md).
      const bool any = *rc::gen::inRange(0, 100) < 8;
      const int y = variant < kLinearNoBias ? partner(m, fits) : pick(m, [&](int b) {
        return m.shape(b).size() == 2 && (any || fits(b));
      });
      if (y < 0) return nullptr;
      if (variant < kLinearNoBias) return one(OpKind::kMatmul, {x, y});
      if (variant == kLinearNoBias) return one(OpKind::kLinear, {x, y});
      // PyTorch also takes a bias that merely broadcasts; the engine wants [out] (README.md).
      const int64_t out_features = m.shape(y)[0];
      const int bias = pick(m, [&](int b) { return m.shape(b) == Dims{out_features}; });
      if (bias < 0) return nullptr;
      return one(OpKind::kLinear, {x, y, bias});
    }
    default:
      return one(OpKind::kClone, {x});
  }
}

namespace {

// ---- views and aliases -----------------------------------------------------------------------

class View final : public ApiCommand {
 public:
  View(int name, int of, Dims shape, bool spelled_view)
      : name_(name), of_(of), shape_(std::move(shape)), spelled_view_(spelled_view) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE((fresh(m, name_) && m.has(of_)));
    // Whether it is a view depends on strides the model knows (Note [Model layouts]).
    RC_PRE((m.impl(m.impl_of(of_)).layout_known && !m.root_overlaps(m.impl_of(of_))));
  }
  Outcome step(Model& m) const override { return m.view(name_, of_, shape_, spelled_view_); }
  void exec(Sut& sut, const Model&) const override {
    const Tensor& t = sut.tensors.at(of_);
    sut.tensors[name_] =
        spelled_view_ ? ops::view(t, to_shape(shape_)) : ops::reshape(t, to_shape(shape_));
  }
  std::string text() const override {
    return tname(name_) + " = " + tname(of_) + (spelled_view_ ? ".view(" : ".reshape(") +
           dims_py(shape_) + ")";
  }

 private:
  int name_, of_;
  Dims shape_;
  bool spelled_view_;
};

// A shape with the same number of elements (now and then, one without: the call must raise).
Dims gen_reshape(const Dims& from) {
  const int64_t n = count(from);
  if (*rc::gen::inRange(0, 100) < 5) return {n + 1};
  if (n == 0) return *rc::gen::element(Dims{0}, Dims{0, 2}, Dims{2, 0, 1}, Dims{1, 0});
  std::vector<int64_t> factors;
  for (int64_t k = 2, r = n; r > 1; ++k) {
    while (r % k == 0) {
      factors.push_back(k);
      r /= k;
    }
  }
  Dims shape;
  for (int64_t f : factors) {
    if (shape.empty() || *rc::gen::arbitrary<bool>()) {
      shape.push_back(f);
    } else {
      shape.back() *= f;
    }
  }
  const int ones = *rc::gen::inRange(0, 2);
  for (int i = 0; i < ones; ++i)
    shape.insert(shape.begin() + *rc::gen::inRange<size_t>(0, shape.size() + 1), 1);
  return shape;
}

// ---- the other view ops ----------------------------------------------------------------------

class StridedView final : public ApiCommand {
 public:
  StridedView(int name, int of, ViewCall call, bool no_grad)
      : name_(name), of_(of), call_(std::move(call)), no_grad_(no_grad) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE((fresh(m, name_) && m.has(of_) && !m.root_overlaps(m.impl_of(of_))));
    RC_PRE(!m.edgeless(m.impl_of(of_)));  // Note [Model view kinds]
  }
  Outcome step(Model& m) const override { return m.view_op(name_, of_, call_, no_grad_); }
  void exec(Sut& sut, const Model&) const override {
    const Tensor& t = sut.tensors.at(of_);
    std::optional<NoGradGuard> guard;
    if (no_grad_) guard.emplace();
    const Dims& a = call_.args;
    switch (call_.op) {
      case ViewOp::kTranspose:
        sut.tensors[name_] = ops::transpose(t, a[0], a[1]);
        break;
      case ViewOp::kPermute:
        sut.tensors[name_] = ops::permute(t, std::vector<int64_t>(a.begin(), a.end()));
        break;
      case ViewOp::kSelect:
        sut.tensors[name_] = ops::select(t, a[0], a[1]);
        break;
      case ViewOp::kSlice:
        sut.tensors[name_] = ops::slice(t, a[0], a[1], a[2], a[3]);
        break;
      case ViewOp::kNarrow:
        sut.tensors[name_] = ops::narrow(t, a[0], a[1], a[2]);
        break;
      case ViewOp::kExpand:
        sut.tensors[name_] = ops::expand(t, to_shape(a));
        break;
      case ViewOp::kUnsqueeze:
        sut.tensors[name_] = ops::unsqueeze(t, a[0]);
        break;
      case ViewOp::kSqueeze:
        sut.tensors[name_] = a.empty() ? ops::squeeze(t) : ops::squeeze(t, a[0]);
        break;
      case ViewOp::kDiagonal:
        sut.tensors[name_] = ops::diagonal(t, a[0], a[1], a[2]);
        break;
      case ViewOp::kT:
        sut.tensors[name_] = ops::t(t);
        break;
    }
  }
  std::string text() const override {
    return std::string(no_grad_ ? "with torch.no_grad(): " : "") + tname(name_) + " = " +
           view_text(tname(of_), call_);
  }

 private:
  int name_, of_;
  ViewCall call_;
  bool no_grad_;
};

// split, chunk, unbind (Note [Model view kinds]): names name, name + 1, ..., one per output.
class MultiView final : public ApiCommand {
 public:
  MultiView(int name, int of, MultiCall call, int outputs, bool no_grad)
      : name_(name), of_(of), call_(call), outputs_(outputs), no_grad_(no_grad) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE((fresh(m, name_) && m.has(of_) && !m.root_overlaps(m.impl_of(of_))));
    RC_PRE(!m.edgeless(m.impl_of(of_)));
    const auto parts = multi_parts(m.shape(of_), call_);
    RC_PRE((parts && static_cast<int>(parts->size()) == outputs_));
  }
  Outcome step(Model& m) const override {
    std::vector<int> names;
    for (int k = 0; k < outputs_; ++k) names.push_back(name_ + k);
    return m.multi_view(names, of_, call_, no_grad_);
  }
  void exec(Sut& sut, const Model&) const override {
    const Tensor& t = sut.tensors.at(of_);
    std::optional<NoGradGuard> guard;
    if (no_grad_) guard.emplace();
    const std::vector<Tensor> out = call_.op == MultiOp::kSplit ? ops::split(t, call_.n, call_.dim)
                                    : call_.op == MultiOp::kChunk
                                        ? ops::chunk(t, call_.n, call_.dim)
                                        : ops::unbind(t, call_.dim);
    for (size_t k = 0; k < out.size(); ++k) sut.tensors[name_ + static_cast<int>(k)] = out[k];
  }
  std::string text() const override {
    std::string lhs;
    for (int k = 0; k < outputs_; ++k) lhs += tname(name_ + k) + ", ";
    return std::string(no_grad_ ? "with torch.no_grad(): " : "") + lhs + "= " +
           multi_text(tname(of_), call_);
  }

 private:
  int name_, of_;
  MultiCall call_;
  int outputs_;
  bool no_grad_;
};

// A view op and its arguments for a tensor of shape `s`, mostly valid (now and then out of
// range: the call must raise).
ViewCall gen_view_call(const Dims& s) {
  const auto rank = static_cast<int64_t>(s.size());
  const int64_t n = std::max<int64_t>(rank, 1);
  const bool wild = *rc::gen::inRange(0, 100) < 6;
  auto dim = [&](int64_t r) {
    return *rc::gen::inRange<int64_t>(wild ? -r - 1 : -r, wild ? r + 1 : r);
  };
  // The size of dim d, and 1 for a dim out of range (a wild call, which must raise).
  auto size = [&](int64_t d) {
    const int64_t at = d < 0 ? d + rank : d;
    return at < 0 || at >= rank ? int64_t{1} : s[static_cast<size_t>(at)];
  };
  const auto op =
      *rc::gen::element(ViewOp::kTranspose, ViewOp::kPermute, ViewOp::kSelect, ViewOp::kSlice,
                        ViewOp::kSlice, ViewOp::kNarrow, ViewOp::kExpand, ViewOp::kUnsqueeze,
                        ViewOp::kSqueeze, ViewOp::kDiagonal, ViewOp::kT);
  ViewCall call{op, {}};
  switch (op) {
    case ViewOp::kTranspose:
      call.args = {dim(n), dim(n)};
      break;
    case ViewOp::kPermute: {
      Dims order(rank);
      for (int64_t d = 0; d < rank; ++d) order[d] = d;
      call.args = order;
      for (int64_t d = rank - 1; d > 0; --d)
        std::swap(call.args[d], call.args[*rc::gen::inRange<int64_t>(0, d + 1)]);
      if (wild && rank > 0) call.args.back() = call.args.front();
      break;
    }
    case ViewOp::kSelect: {
      const int64_t d = dim(n), k = size(wild ? 0 : d);
      call.args = {d, *rc::gen::inRange<int64_t>(wild ? -k - 1 : -k,
                                                 wild ? k + 1 : std::max<int64_t>(k, 1))};
      break;
    }
    case ViewOp::kSlice: {
      const int64_t d = dim(n), k = size(d);
      call.args = {d, *rc::gen::inRange<int64_t>(-k - 1, k + 2),
                   *rc::gen::inRange<int64_t>(-k - 1, k + 2),
                   wild ? 0 : *rc::gen::element<int64_t>(1, 1, 2, 3)};
      break;
    }
    case ViewOp::kNarrow: {
      const int64_t d = dim(n), k = size(d);
      const int64_t start = *rc::gen::inRange<int64_t>(0, k + 1);
      call.args = {d, start, *rc::gen::inRange<int64_t>(0, k - start + (wild ? 2 : 1))};
      break;
    }
    case ViewOp::kExpand: {
      call.args = s;
      for (int64_t& d : call.args) {
        if (d == 1)
          d = *rc::gen::element<int64_t>(1, 2, 3);
        else if (*rc::gen::inRange(0, 4) == 0)
          d = -1;
      }
      if (*rc::gen::inRange(0, 3) == 0)
        call.args.insert(call.args.begin(), *rc::gen::element<int64_t>(1, 2));
      if (wild && !call.args.empty()) call.args.back() += 1;
      break;
    }
    case ViewOp::kUnsqueeze:
      call.args = {dim(rank + 1)};
      break;
    case ViewOp::kSqueeze:
      if (*rc::gen::arbitrary<bool>()) call.args = {dim(n)};
      break;
    case ViewOp::kDiagonal:
      call.args = {*rc::gen::inRange<int64_t>(-2, 3), dim(n), dim(n)};
      break;
    case ViewOp::kT:
      break;
  }
  return call;
}

}  // namespace

CommandPtr make_view(const Model& m) {
  // Now and then a view whose grad_fn cannot be read (the call must raise in grad mode).
  int x = *rc::gen::inRange(0, 10) == 0 ? pick_unreadable(m) : -1;
  if (x < 0 && m.dual_live() && *rc::gen::inRange(0, 2) == 0) {  // often a dual, in a level
    x = pick(m, [&](int n) { return m.tangent_kind(n) == Tangent::kKnown; });
  }
  if (x < 0) x = pick_any(m);
  if (x < 0) return nullptr;
  const bool no_grad = *rc::gen::inRange(0, 6) == 0;
  const Dims& s = m.shape(x);
  if (!s.empty() && *rc::gen::inRange(0, 3) == 0) {  // split, chunk, unbind
    const auto rank = static_cast<int64_t>(s.size());
    MultiCall call;
    call.op = *rc::gen::element(MultiOp::kSplit, MultiOp::kChunk, MultiOp::kUnbind);
    call.dim = *rc::gen::inRange<int64_t>(-rank, rank);
    const int64_t size = s[static_cast<size_t>(call.dim < 0 ? call.dim + rank : call.dim)];
    call.n = *rc::gen::inRange<int64_t>(1, 4);
    const auto parts = multi_parts(s, call);
    if (!parts || parts->empty() || parts->size() > 4 ||
        (size == 0 && call.op == MultiOp::kSplit)) {
      return nullptr;
    }
    return std::make_shared<MultiView>(m.next_name(), x, call, static_cast<int>(parts->size()),
                                       no_grad);
  }
  if (*rc::gen::inRange(0, 3) == 0) {
    return std::make_shared<View>(m.next_name(), x, gen_reshape(m.shape(x)),
                                  *rc::gen::arbitrary<bool>());
  }
  return std::make_shared<StridedView>(m.next_name(), x, gen_view_call(m.shape(x)), no_grad);
}

namespace {

enum class AliasKind { kDetach, kDropoutNoP, kDropoutEval };

class Alias final : public ApiCommand {
 public:
  Alias(int name, int of, AliasKind kind) : name_(name), of_(of), kind_(kind) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE((fresh(m, name_) && m.has(of_)));
  }
  Outcome step(Model& m) const override {
    return kind_ == AliasKind::kDetach ? m.detach(name_, of_) : m.alias(name_, of_);
  }
  void exec(Sut& sut, const Model&) const override {
    const Tensor& t = sut.tensors.at(of_);
    switch (kind_) {
      case AliasKind::kDetach:
        sut.tensors[name_] = ops::detach(t);
        break;
      case AliasKind::kDropoutNoP:
        sut.tensors[name_] = ops::dropout(t, 0.0, true, 1);
        break;
      case AliasKind::kDropoutEval:
        sut.tensors[name_] = ops::dropout(t, 0.5, false, 1);
        break;
    }
  }
  std::string text() const override {
    const std::string out = tname(name_) + " = ";
    switch (kind_) {
      case AliasKind::kDetach:
        return out + tname(of_) + ".detach()";
      case AliasKind::kDropoutNoP:
        return out + "F.dropout(" + tname(of_) + ", 0.0, True)";
      case AliasKind::kDropoutEval:
        return out + "F.dropout(" + tname(of_) + ", 0.5, False)";
    }
    return out;
  }

 private:
  int name_, of_;
  AliasKind kind_;
};

}  // namespace

CommandPtr make_alias(const Model& m) {
  const int x = pick_any(m);
  if (x < 0) return nullptr;
  return std::make_shared<Alias>(
      m.next_name(), x,
      *rc::gen::weightedElement<AliasKind>(
          {{3, AliasKind::kDetach}, {1, AliasKind::kDropoutNoP}, {1, AliasKind::kDropoutEval}}));
}

namespace {

// ---- in-place ops ----------------------------------------------------------------------------

class InPlace final : public ApiCommand {
 public:
  InPlace(OpKind kind, int self, int other, bool no_grad)
      : kind_(kind), self_(self), other_(other), no_grad_(no_grad) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE((m.has(self_) && m.has(other_)));
    // Overlaps PyTorch refuses are refused by the model too (Model::overlap_error); those it
    // lets through (TensorIterator's "too hard" to tell) give results that depend on the order
    // elements are visited in, where an element is read at another index than it is written at:
    // not generated. Nor writes whose checks depend on strides the model does not know.
    const int a = m.impl_of(self_), b = m.impl_of(other_);
    const bool shared = m.impl(a).storage == m.impl(b).storage;
    RC_PRE(m.impl(a).layout_known);
    RC_PRE(!(shared && !m.impl(b).layout_known));
    RC_PRE(!m.root_overlaps(a));
    RC_PRE(!m.edgeless(b));  // Note [Model view kinds]: read only as self
    // Note [Model tangents of views]: a recorded write into a view that has a tangent writes
    // that tangent (a view of its base's) in place, which PyTorch refuses as a write into a view
    // made under no_grad where the tangent view was made so (by a write or a view op under
    // no_grad) and the new tangent requires grad: not modelled, not generated.
    RC_PRE(!(m.dual_live() && !no_grad_ && m.impl(a).fw_base >= 0 &&
             m.impl(a).tangent_kind != Tangent::kNone &&
             (m.requires_grad(a) || m.requires_grad(b))));
    // Note [Model saved-tensor hooks]: backward would read the write through a keeping pack,
    // also when the op keeps `other` and then writes it (mul_(a, a)).
    RC_PRE(!m.kept_by_pack(a));
    const int scope = m.innermost_saved_hooks();
    RC_PRE(!(shared && scope >= 0 && m.saved_hooks()[scope].pack == PackKind::kKeep));
    if (shared && broadcasts_to(m.shape(other_), m.shape(self_)) &&
        m.overlap_error(kind_, a, b) == nullptr) {
      const std::vector<int64_t> written = positions(m.layout(a));
      const Strided lb = m.layout(b);
      std::vector<int64_t> read = positions(lb);
      std::vector<int64_t> read_at(written.size());
      for (size_t k = 0; k < written.size(); ++k) {
        read_at[k] =
            read[broadcast_source(m.shape(other_), m.shape(self_), static_cast<int64_t>(k))];
      }
      for (size_t k = 0; k < written.size(); ++k) {
        for (size_t j = 0; j < written.size(); ++j) {
          RC_PRE(!(j != k && read_at[j] == written[k] && written[j] != written[k]));
        }
      }
    }
    if (broadcasts_to(m.shape(other_), m.shape(self_))) {
      for (const Val<double>& v : m.preview(kind_, {}, {self_, other_})) RC_PRE(tame(v.v));
    }
  }
  Outcome step(Model& m) const override { return m.inplace(kind_, self_, other_, no_grad_); }
  void exec(Sut& sut, const Model&) const override {
    Tensor& a = sut.tensors.at(self_);
    const Tensor& b = sut.tensors.at(other_);
    std::optional<NoGradGuard> guard;
    if (no_grad_) guard.emplace();
    switch (kind_) {
      case OpKind::kAddInplace:
        ops::add_(a, b);
        break;
      case OpKind::kMulInplace:
        ops::mul_(a, b);
        break;
      default:
        ops::copy_(a, b);
        break;
    }
  }
  std::string text() const override {
    return std::string(no_grad_ ? "with torch.no_grad(): " : "") + tname(self_) + "." +
           op_name(kind_) + "(" + tname(other_) + ")";
  }

 private:
  OpKind kind_;
  int self_, other_;
  bool no_grad_;
};

}  // namespace

CommandPtr make_inplace(const Model& m) {
  // Now and then a view made under no_grad or whose grad_fn cannot be read (Note [Model view
  // kinds]).
  int a = -1;
  switch (*rc::gen::inRange(0, 8)) {
    case 0:
      a = pick_unreadable(m);
      break;
    case 1:
      a = pick_edgeless(m);
      break;
    case 2:  // an output of split, chunk or unbind, or a view made under no_grad
      a = pick(m, [&](int n) {
        return m.is_view(m.impl_of(n)) && m.impl(m.impl_of(n)).made != Made::kViewOp;
      });
      break;
    default:
      break;
  }
  if (a < 0) a = pick(m, [&](int n) { return !m.kept_by_pack(m.impl_of(n)); });
  if (a < 0) return nullptr;
  // Often the tensor itself or one sharing its storage (a view, a detached alias); often one
  // that requires grad (so that the written tensor gets a history, a leaf becomes a non-leaf).
  const int storage = m.impl(m.impl_of(a)).storage;
  auto fits = [&](int o) { return broadcasts_to(m.shape(o), m.shape(a)); };
  int b = -1;
  switch (*rc::gen::weightedElement<int>({{2, 0}, {2, 1}, {1, 2}})) {
    case 0:
      b = partner(m, [&](int o) { return m.impl(m.impl_of(o)).storage == storage && fits(o); });
      break;
    case 1:
      b = partner(m, [&](int o) { return m.requires_grad(m.impl_of(o)) && fits(o); });
      break;
    default:
      break;
  }
  if (b < 0) b = partner(m, fits);
  if (b < 0) return nullptr;
  return std::make_shared<InPlace>(
      *rc::gen::element(OpKind::kAddInplace, OpKind::kMulInplace, OpKind::kCopyInplace), a, b,
      *rc::gen::weightedElement<bool>({{3, false}, {1, true}}));
}

CommandPtr make_inplace_reaching_tangents(const Model& m) {
  // Into a view (whose forward base takes the tangent), into storage a tangent reads, or into
  // any tensor; mostly with an operand that has a tangent (Note [Model tangents of views]).
  int a = -1;
  switch (*rc::gen::inRange(0, 3)) {
    case 0:
      a = pick(m, [&](int n) { return m.is_view(m.impl_of(n)); });
      break;
    case 1:
      a = pick(m, [&](int n) { return m.dual_storage(m.impl_of(n)); });
      break;
    default:
      break;
  }
  if (a < 0) a = pick(m, [&](int n) { return !m.kept_by_pack(m.impl_of(n)); });
  if (a < 0) return nullptr;
  const int storage = m.impl(m.impl_of(a)).storage;
  auto fits = [&](int o) { return broadcasts_to(m.shape(o), m.shape(a)); };
  int b = -1;
  if (*rc::gen::inRange(0, 4) == 0) {  // the storage it writes: x.mul_(x), v.add_(x.t())
    b = partner(m, [&](int o) { return m.impl(m.impl_of(o)).storage == storage && fits(o); });
  }
  if (b < 0) b = partner(m, [&](int o) { return m.tangent_kind(o) == Tangent::kKnown && fits(o); });
  if (b < 0) return nullptr;
  return std::make_shared<InPlace>(
      *rc::gen::element(OpKind::kAddInplace, OpKind::kMulInplace, OpKind::kCopyInplace), a, b,
      *rc::gen::weightedElement<bool>({{1, false}, {1, true}}));
}

namespace {

// ---- custom Functions ------------------------------------------------------------------------

class Custom final : public ApiCommand {
 public:
  Custom(OpKind kind, int name, int p, int q) : kind_(kind), name_(name), p_(p), q_(q) {}
  std::vector<int> outs() const {
    if (kind_ == OpKind::kCustomMul) return {name_};
    return {name_, name_ + 1};
  }
  void checkPreconditions(const Model& m) const override {
    for (int o : outs()) RC_PRE(fresh(m, o));
    RC_PRE((m.has(p_) && m.has(q_) && m.shape(p_) == m.shape(q_)));
    // Note [Model dual levels]: the Functions have no jvp.
    RC_PRE((m.tangent_kind(p_) == Tangent::kNone && m.tangent_kind(q_) == Tangent::kNone));
    for (const Val<double>& v : m.preview(kind_, {}, {p_, q_})) RC_PRE(tame(v.v));
  }
  Outcome step(Model& m) const override { return m.custom(kind_, outs(), p_, q_); }
  void exec(Sut& sut, const Model& after) const override {
    set_next_custom_tag(after.grad_fn_node(name_));
    const Tensor &p = sut.tensors.at(p_), &q = sut.tensors.at(q_);
    if (kind_ == OpKind::kCustomMul) {
      sut.tensors[name_] = custom_mul(p, q);
      return;
    }
    TensorList uw = custom_two(p, q);
    sut.tensors[name_] = uw[0];
    sut.tensors[name_ + 1] = uw[1];
  }
  std::string text() const override {
    std::string lhs = tname(name_);
    if (kind_ == OpKind::kCustomTwo) lhs += ", " + tname(name_ + 1);
    return lhs + " = " + op_name(kind_) + ".apply(" + tname(p_) + ", " + tname(q_) + ")";
  }

 private:
  OpKind kind_;
  int name_, p_, q_;
};

}  // namespace

CommandPtr make_leaf(const Model& m) { return std::make_shared<MakeLeaf>(m); }

CommandPtr make_custom(const Model& m) {
  const int p = pick_any(m);
  if (p < 0) return nullptr;
  const int q = pick(m, [&](int o) { return m.shape(o) == m.shape(p); });
  return std::make_shared<Custom>(*rc::gen::element(OpKind::kCustomMul, OpKind::kCustomTwo),
                                  m.next_name(), p, q);
}

}  // namespace ag::proptests
