#include "proptests/conformance/program_gen.h"

#include <algorithm>

#include "engine/error.h"
#include "engine/grad_mode.h"
#include "ops/ops.h"

namespace ag::proptests {
namespace {

enum class Family {
  kView,
  kDetach,
  kInplace,
  kSetRequiresGrad,
  kCustom,
  kGrad,
  kBackward,
  kReadGrad,
  kSetGrad,
  kLeaf,
  kZeroSizeLeaf,
  kRawOp,
  kAlias,
};

// Relative frequencies of the families (Move::family picks one, modulo the total).
struct Weighted {
  Family family;
  int weight;
  const char* name;
};
const Weighted kFamilies[] = {
    {Family::kView, 8, "view"},
    {Family::kDetach, 3, "detach"},
    {Family::kInplace, 12, "in-place"},
    {Family::kSetRequiresGrad, 3, "requires_grad_"},
    {Family::kCustom, 8, "custom Function"},
    {Family::kGrad, 12, "grad"},
    {Family::kBackward, 10, "backward"},
    {Family::kReadGrad, 6, ".grad read"},
    {Family::kSetGrad, 3, ".grad write"},
    {Family::kLeaf, 3, "leaf"},
    {Family::kZeroSizeLeaf, 2, "zero-size leaf"},
    {Family::kRawOp, 5, "op on any operands"},
    {Family::kAlias, 2, "dropout(p=0) alias"},
};

const Weighted& family_of(const Move& m) {
  int total = 0;
  for (const Weighted& w : kFamilies) total += w.weight;
  int k = ((m.family % total) + total) % total;
  for (const Weighted& w : kFamilies) {
    if (k < w.weight) return w;
    k -= w.weight;
  }
  return kFamilies[0];
}

// Whether `from` broadcasts to exactly `to` (an in-place op's second operand).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    const int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

// What the builder knows of each value, to pick operands that mostly make sense. It is a rough
// model (the programs' records come from running them); a wrong guess only makes a statement
// less likely to be interesting.
struct Info {
  Shape shape;
  bool requires_grad = false;
  bool is_leaf = true;
  bool from_leaf_stmt = false;
  // A grad() result, or a grad_outputs tensor of grad(): PyTorch's backward formulas may make
  // results views of each other and of grad_outputs (transpose, sum, expand), where the engine's
  // copy (DEVIATIONS.md, copying-shape-ops). The generator writes into none of them.
  bool no_writes = false;
  int storage = 0;  // values with the same number share storage (views, detach, aliases)
};

class Builder {
 public:
  explicit Builder(const CompositionSpec& ops) : seed_(ops.seed) {
    CompositionSpec leaves_only = ops;
    leaves_only.steps.clear();
    plan_ = proptests::build_plan(leaves_only);
    absorb_plan();
  }

  void op_step(const proptests::Step& step, int index) {
    proptests::append_step(plan_, step, index);
    absorb_plan();
  }

  void move(const Move& m) {
    switch (family_of(m).family) {
      case Family::kView:
        return view(m);
      case Family::kDetach:
        return detach(m);
      case Family::kInplace:
        return inplace(m);
      case Family::kSetRequiresGrad:
        return set_requires_grad(m);
      case Family::kCustom:
        return custom(m);
      case Family::kGrad:
      case Family::kBackward:
        return autograd_call(m, family_of(m).family == Family::kGrad);
      case Family::kReadGrad:
        return read_grad(m);
      case Family::kSetGrad:
        return set_grad(m);
      case Family::kLeaf:
        leaf(info_[any(m.a)].shape, m.param & 1);
        return;
      case Family::kZeroSizeLeaf:
        return zero_size_leaf(m);
      case Family::kRawOp:
        return raw_op(m);
      case Family::kAlias:
        return alias(m);
    }
  }

  ConformanceProgram take() {
    program_.num_values = static_cast<int>(info_.size());
    return std::move(program_);
  }

 private:
  // ---- values ----

  int count() const { return static_cast<int>(info_.size()); }

  // A new value made by this builder: the op-set builder sees it as a value of its shape (with
  // zero-size dims shown as 1, which that builder does not expect; the real op then raises).
  int new_value(const Shape& shape, bool requires_grad, int storage = -1) {
    Instr placeholder;
    placeholder.op = Op::kClone;
    plan_.instrs.push_back(placeholder);
    Shape shown = shape;
    for (int64_t& d : shown) d = std::max<int64_t>(d, 1);
    plan_.shapes.push_back(shown);
    Info info;
    info.shape = shape;
    info.requires_grad = requires_grad;
    info.is_leaf = !requires_grad;
    info.storage = storage >= 0 ? storage : storages_++;
    info_.push_back(info);
    absorbed_ = plan_.instrs.size();
    return count() - 1;
  }

  int leaf(const Shape& shape, bool requires_grad) {
    const int index = static_cast<int>(plan_.leaf_shapes.size());
    plan_.leaf_shapes.push_back(shape);
    plan_.leaf_requires_grad.push_back(requires_grad);
    const int v = new_value(shape, false);
    plan_.instrs.back().op = Op::kLeaf;
    plan_.instrs.back().args = {index};
    add_leaf_stmt(v, index);
    info_[v].requires_grad = requires_grad;
    return v;
  }

  void add_leaf_stmt(int v, int leaf_index) {
    Stmt s;
    s.kind = StmtKind::kLeaf;
    s.results = {v};
    s.shape = info_[v].shape;
    s.seed = seed_ * 1000 + static_cast<uint64_t>(leaf_index);  // as proptests::make_leaves
    s.flag = plan_.leaf_requires_grad[leaf_index];
    info_[v].from_leaf_stmt = true;
    program_.stmts.push_back(s);
  }

  // Turns what the op-set builder appended to the plan into statements.
  void absorb_plan() {
    for (; absorbed_ < plan_.instrs.size(); ++absorbed_) {
      const Instr& in = plan_.instrs[absorbed_];
      Info info;
      info.shape = plan_.shapes[absorbed_];
      if (in.op == Op::kLeaf) {
        info.requires_grad = plan_.leaf_requires_grad[in.args[0]];
        info.storage = storages_++;
        info_.push_back(info);
        add_leaf_stmt(count() - 1, in.args[0]);
        continue;
      }
      for (int a : in.args) info.requires_grad = info.requires_grad || info_[a].requires_grad;
      info.is_leaf = !info.requires_grad;
      // Views, and the ops that return their input itself when it has the shape already.
      const bool same_tensor =
          (in.op == Op::kBroadcastTo || in.op == Op::kSumTo) && info_[in.args[0]].shape == in.shape;
      info.storage = in.op == Op::kReshape || same_tensor ? info_[in.args[0]].storage : storages_++;
      info_.push_back(info);
      Stmt s;
      s.kind = StmtKind::kOp;
      s.results = {count() - 1};
      s.instr = in;
      program_.stmts.push_back(s);
    }
  }

  // ---- picks ----

  int any(int k) const { return k % count(); }

  // The k-th newest value v with pred(v), or -1.
  template <typename Pred>
  int newest(int k, Pred pred) const {
    std::vector<int> ids;
    for (int v = 0; v < count(); ++v) {
      if (pred(v)) ids.push_back(v);
    }
    if (ids.empty()) return -1;
    return ids[ids.size() - 1 - static_cast<size_t>(k) % ids.size()];
  }

  // Among the values that require grad, newest first (as random_graph.h picks outputs and
  // requested inputs); any value when none does.
  int differentiable(int k) const {
    const int v = newest(k, [&](int u) { return info_[u].requires_grad; });
    return v >= 0 ? v : any(k);
  }

  int leafish(int k) const {
    const int v = newest(k, [&](int u) { return info_[u].is_leaf; });
    return v >= 0 ? v : any(k);
  }

  int same_shape(int k, const Shape& shape) const {
    return newest(k, [&](int u) { return info_[u].shape == shape; });
  }

  // Other values sharing v's storage (newest first, at most 6).
  std::vector<int> aliases_of(int v) const {
    std::vector<int> out;
    for (int u = count() - 1; u >= 0 && out.size() < 6; --u) {
      if (u != v && info_[u].storage == info_[v].storage) out.push_back(u);
    }
    return out;
  }

  Stmt& emit(Stmt s) {
    program_.stmts.push_back(std::move(s));
    return program_.stmts.back();
  }

  bool writable(int v) const {
    return std::none_of(info_.begin(), info_.end(), [&](const Info& i) {
      return i.storage == info_[v].storage && i.no_writes;
    });
  }

  // ---- families ----

  void view(const Move& m) {
    const int x = (m.param & 1) ? differentiable(m.a) : any(m.a);
    const Shape& in = info_[x].shape;
    const int64_t n = numel(in);
    Shape shape;
    switch ((m.param >> 1) % 4) {
      case 0:
        shape = {n};
        break;
      case 1:  // a leading 1
        shape = in.size() < 3 ? Shape{1} : Shape{n};
        if (in.size() < 3) shape.insert(shape.end(), in.begin(), in.end());
        break;
      case 2:
        shape = in;
        break;
      default:
        shape = in.size() >= 2 ? Shape{in[0] * in[1]} : Shape{n, 1};
        for (size_t d = 2; d < in.size(); ++d) shape.push_back(in[d]);
        break;
    }
    Stmt s;
    s.kind = StmtKind::kView;
    s.args = {x};
    s.shape = shape;
    s.results = {new_value(shape, info_[x].requires_grad, info_[x].storage)};
    emit(s);
  }

  void detach(const Move& m) {
    const int x = any(m.a);
    Stmt s;
    s.kind = StmtKind::kDetach;
    s.args = {x};
    s.results = {new_value(info_[x].shape, false, info_[x].storage)};
    emit(s);
  }

  void inplace(const Move& m) {
    const bool any_target = !(m.param & 1);
    const int t =
        newest(m.a, [&](int v) { return (any_target || info_[v].requires_grad) && writable(v); });
    if (t < 0) return;
    const Shape shape = info_[t].shape;
    int src = -1;
    switch ((m.param >> 3) % 4) {
      case 0:
        src = any(m.b);
        if (!broadcasts_to(info_[src].shape, shape)) src = leaf(shape, m.c & 1);
        break;
      case 1:
        src = t;  // the same tensor twice: mul_(a, a)
        break;
      case 2: {  // a view of the target
        Stmt v;
        v.kind = StmtKind::kView;
        v.args = {t};
        v.shape = shape;
        v.results = {new_value(shape, info_[t].requires_grad, info_[t].storage)};
        src = v.results[0];
        emit(v);
        break;
      }
      default:
        src = leaf(m.c % 3 == 0 ? Shape{} : shape, m.c & 1);
        break;
    }
    Stmt s;
    s.kind = StmtKind::kInplace;
    s.inplace = static_cast<InplaceKind>((m.param >> 1) % 3);
    s.args = {t, src};
    s.flag = (m.param >> 5) % 3 == 0;
    s.record_flags = aliases_of(t);
    if (!s.flag && (info_[t].requires_grad || info_[src].requires_grad)) {
      info_[t].requires_grad = true;
      info_[t].is_leaf = false;
    }
    emit(s);
  }

  void set_requires_grad(const Move& m) {
    const int x = (m.param & 1) ? leafish(m.a) : any(m.a);
    Stmt s;
    s.kind = StmtKind::kSetRequiresGrad;
    s.args = {x};
    s.flag = (m.param >> 1) & 1;
    if (info_[x].is_leaf) info_[x].requires_grad = s.flag;
    emit(s);
  }

  void custom(const Move& m) {
    const auto kind = static_cast<CustomKind>(m.param % 3);
    const int x = ((m.param >> 2) & 1) ? differentiable(m.a) : any(m.a);
    int y = any(m.b);
    if (!broadcastable(info_[x].shape, info_[y].shape)) y = x;
    Stmt s;
    s.kind = StmtKind::kCustom;
    s.custom = kind;
    s.args = kind == CustomKind::kSplit ? std::vector<int>{x} : std::vector<int>{x, y};
    bool rg = false;
    for (int a : s.args) rg = rg || info_[a].requires_grad;
    const Shape shape =
        kind == CustomKind::kSplit ? info_[x].shape : broadcast(info_[x].shape, info_[y].shape);
    s.results.push_back(new_value(shape, rg));
    if (kind != CustomKind::kMul) {
      s.results.push_back(new_value(shape, rg && kind == CustomKind::kTwo));
    }
    emit(s);
  }

  // A gradient for output `out`, variant `variant` (k distinguishes outputs).
  int grad_output(int out, int variant, int k) {
    const Shape shape = info_[out].shape;
    switch (variant % 4) {
      case 0:
        return numel(shape) == 1 ? -1 : leaf(shape, false);
      case 1:
        return leaf(shape, (k & 1) != 0);
      case 2: {
        const int v = same_shape(k, shape);
        return v >= 0 ? v : leaf(shape, false);
      }
      default:
        return out;  // e.g. backward({x}, {x})
    }
  }

  void autograd_call(const Move& m, bool is_grad) {
    Stmt s;
    s.kind = is_grad ? StmtKind::kGrad : StmtKind::kBackward;
    const bool any_outputs = (m.param >> 11) % 8 == 0;  // sometimes one that may not require grad
    auto pick_output = [&](int k) { return any_outputs ? any(k) : differentiable(k); };
    s.outputs.push_back(pick_output(m.a));
    if (m.param % 2) s.outputs.push_back(pick_output(m.b));
    for (size_t k = 0; k < s.outputs.size(); ++k) {
      s.grad_outputs.push_back(grad_output(s.outputs[k], (m.param >> 1) + static_cast<int>(k),
                                           m.c + static_cast<int>(k)));
    }
    const int input_mode = (m.param >> 3) % 4;  // backward: 0 = every leaf
    if (is_grad || input_mode != 0) {
      const int n = 1 + m.c % 3;
      for (int j = 0; j < n; ++j) s.inputs.push_back(differentiable(m.b + j * (1 + m.a % 5)));
      if (input_mode == 1) s.inputs.push_back(s.inputs[0]);  // a duplicate
    }
    s.create_graph = (m.param >> 5) & 1;
    s.retain_graph = (m.param >> 6) % 3 - 1;
    s.allow_unused = is_grad && ((m.param >> 8) & 1);
    if (is_grad) {
      for (int g : s.grad_outputs) {
        if (g >= 0) info_[g].no_writes = true;
      }
      for (int in : s.inputs) {
        s.results.push_back(new_value(info_[in].shape, s.create_graph));
        info_.back().no_writes = true;
      }
    } else {
      for (int v = 0; v < count(); ++v) {
        if (info_[v].from_leaf_stmt) s.record_grads.push_back(v);
      }
      for (int in : s.inputs) {
        if (std::find(s.record_grads.begin(), s.record_grads.end(), in) == s.record_grads.end())
          s.record_grads.push_back(in);
      }
    }
    emit(s);
  }

  void read_grad(const Move& m) {
    const bool any_differentiable = m.param & 1;
    const int x = newest(m.a, [&](int v) {
      const Info& i = info_[v];
      // A grad() result may be the very tensor passed as grad_outputs (not writable, below).
      return writable(v) && (any_differentiable ? i.requires_grad : i.is_leaf);
    });
    if (x < 0) return;
    Stmt s;
    s.kind = StmtKind::kReadGrad;
    s.args = {x};
    s.results = {new_value(info_[x].shape, false)};
    emit(s);
  }

  void set_grad(const Move& m) {
    const int x = leafish(m.a);
    Stmt s;
    s.kind = StmtKind::kSetGrad;
    s.args = {x};
    switch (m.param % 3) {
      case 0:
        break;   // .grad = None
      case 1: {  // backward() may accumulate into it in place
        const int y = same_shape(m.b, info_[x].shape);
        s.args.push_back(y >= 0 && writable(y) ? y : leaf(info_[x].shape, false));
        break;
      }
      default:
        s.args.push_back(leaf(info_[x].shape, false));
        break;
    }
    emit(s);
  }

  void zero_size_leaf(const Move& m) {
    const int rank = 1 + m.a % 3;
    Shape shape;
    for (int d = 0; d < rank; ++d) shape.push_back((m.b >> (2 * d)) % 4);
    shape[m.c % rank] = 0;
    leaf(shape, m.param & 1);
  }

  // An op on operands as they are (no adapters): it raises when they do not fit, and both
  // engines must agree on that. Its result shape comes from running the op on zeros.
  void raw_op(const Move& m) {
    static const Op kOps[] = {Op::kAdd, Op::kMul, Op::kMm, Op::kMatmul, Op::kLinear, Op::kSumDim};
    Instr in;
    in.op = kOps[m.param % 6];
    in.args = {any(m.a)};
    if (in.op != Op::kSumDim) in.args.push_back(any(m.b));
    in.dim0 = m.b % 5 - 2;
    in.keepdim = (m.param >> 3) & 1;
    Shape shape;
    bool rg = false;
    TensorList zeros;
    for (int a : in.args) {
      zeros.push_back(ops::zeros(info_[a].shape, DType::kFloat64));
      rg = rg || info_[a].requires_grad;
    }
    try {
      NoGradGuard no_grad;
      shape = proptests::run_instr(in, zeros).shape();
    } catch (const Error&) {
      // It raises: later statements that use it are skipped.
    }
    Stmt s;
    s.kind = StmtKind::kOp;
    s.instr = in;
    s.results = {new_value(shape, rg)};
    emit(s);
  }

  void alias(const Move& m) {  // dropout(x, p=0) returns x itself (in PyTorch too)
    const int x = any(m.a);
    Instr in;
    in.op = Op::kDropout;
    in.args = {x};
    in.scalar = 0.0;
    Stmt s;
    s.kind = StmtKind::kOp;
    s.instr = in;
    s.results = {new_value(info_[x].shape, info_[x].requires_grad, info_[x].storage)};
    info_.back() = info_[x];
    emit(s);
  }

  uint64_t seed_;
  proptests::Plan plan_;
  size_t absorbed_ = 0;
  std::vector<Info> info_;
  int storages_ = 0;
  ConformanceProgram program_;
};

template <typename T>
rc::Gen<T> full_size(rc::Gen<T> g) {
  return rc::gen::resize(100, std::move(g));
}

}  // namespace

rc::Gen<ConformanceSpec> program_spec_gen() {
  const auto move = rc::gen::exec([] {
    Move m;
    m.family = *full_size(rc::gen::inRange(0, 1000));
    m.at = *full_size(rc::gen::inRange(0, 16));
    m.a = *full_size(rc::gen::inRange(0, 64));
    m.b = *full_size(rc::gen::inRange(0, 64));
    m.c = *full_size(rc::gen::inRange(0, 64));
    m.param = *full_size(rc::gen::inRange(0, 1 << 14));
    return m;
  });
  return rc::gen::exec([move] {
    ConformanceSpec spec;
    spec.ops = *proptests::program_gen();
    spec.moves = *rc::gen::scale(0.3, rc::gen::container<std::vector<Move>>(move));
    return spec;
  });
}

ConformanceProgram build_program(const ConformanceSpec& spec) {
  Builder b(spec.ops);
  const int steps = static_cast<int>(spec.ops.steps.size());
  for (int i = 0; i <= steps; ++i) {
    for (const Move& m : spec.moves) {
      if (m.at % (steps + 1) == i) b.move(m);
    }
    if (i < steps) b.op_step(spec.ops.steps[i], i);
  }
  return b.take();
}

ConformanceProgram generate_program(uint64_t seed, int id) {
  const uint64_t mixed =
      seed * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(id) * 0xBF58476D1CE4E5B9ull;
  return build_program(program_spec_gen()(rc::Random(mixed), id % 101).value());
}

std::string program_title(uint64_t seed, int id) {
  return "program " + std::to_string(id) + " (seed " + std::to_string(seed) + ")";
}

void showValue(const ConformanceSpec& spec, std::ostream& os) {
  os << "\n" << to_text(build_program(spec));
}

const char* family_name(const Move& move) { return family_of(move).name; }

}  // namespace ag::proptests
