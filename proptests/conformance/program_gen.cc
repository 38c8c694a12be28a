#include "proptests/conformance/program_gen.h"

#include <algorithm>

#include "engine/error.h"
#include "engine/grad_mode.h"
#include "ops/ops.h"
#include "proptests/conformance/engine_runner.h"

namespace ag::proptests {
namespace {

enum class Family {
  kView,
  kDetach,
  kDetachInplace,
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
  kViewOp,
  kViewWrite,
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
    {Family::kDetachInplace, 3, "detach_"},
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
    {Family::kViewOp, 10, "view op"},
    {Family::kViewWrite, 14, "write through a view"},
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
  // A grad() result, or a grad_outputs tensor of grad(): the backward formulas may make results
  // views of each other and of grad_outputs (transpose, sum, expand), in both engines, which the
  // generator does not track. It writes into none of them.
  bool no_writes = false;
  int storage = 0;           // values with the same number share storage (views, detach, aliases)
  int64_t storage_size = 0;  // elements of that storage (at least: as_strided stays inside)
  int base = -1;             // the value a view statement viewed
};

// More small random numbers than a Move holds, drawn from it (so a shrunk spec still maps to one
// program).
class Bits {
 public:
  explicit Bits(const Move& m)
      : x_(static_cast<uint64_t>(m.param) * 0x9E3779B97F4A7C15ull ^
           static_cast<uint64_t>(m.a * 4096 + m.b * 64 + m.c) * 0xBF58476D1CE4E5B9ull) {}
  // In [0, n) (0 for n <= 0).
  int64_t below(int64_t n) {
    x_ ^= x_ >> 31;
    x_ *= 0x94D049BB133111EBull;
    x_ ^= x_ >> 29;
    x_ += 0x9E3779B97F4A7C15ull;
    return n <= 0 ? 0 : static_cast<int64_t>((x_ >> 17) % static_cast<uint64_t>(n));
  }
  int64_t in(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }  // [lo, hi]
  bool one_in(int n) { return below(n) == 0; }

 private:
  uint64_t x_;
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
      case Family::kDetachInplace:
        return detach_inplace(m);
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
      case Family::kViewOp:
        return view_op(m);
      case Family::kViewWrite:
        return view_write(m);
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
    info.storage_size = storage >= 0 ? storage_size_of(storage) : numel(shape);
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
        info.storage_size = numel(info.shape);
        info_.push_back(info);
        add_leaf_stmt(count() - 1, in.args[0]);
        continue;
      }
      for (int a : in.args) info.requires_grad = info.requires_grad || info_[a].requires_grad;
      info.is_leaf = !info.requires_grad;
      // Views (broadcast_to is expand), and sum_to, which returns its input itself when it has
      // the shape already (else a new sum, or a view of one).
      const bool same_tensor = in.op == Op::kSumTo && info_[in.args[0]].shape == in.shape;
      const bool view = in.op == Op::kBroadcastTo;
      const bool shared = in.op == Op::kReshape || in.op == Op::kTranspose || view || same_tensor;
      info.storage = shared ? info_[in.args[0]].storage : storages_++;
      info.storage_size = shared ? storage_size_of(info.storage) : numel(info.shape);
      if (view) info.base = in.args[0];
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

  int64_t storage_size_of(int storage) const {
    int64_t n = -1;
    for (const Info& i : info_) {
      if (i.storage == storage) n = n < 0 ? i.storage_size : std::min(n, i.storage_size);
    }
    return std::max<int64_t>(n, 0);
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

  // x.detach_(): a view raises (PyTorch refuses views, also those of detach() and of no_grad),
  // any other value becomes a leaf that does not require grad. Sometimes retain_grad() comes
  // before it (PyTorch keeps retains_grad set: paper/results/foreign_findings.md F7), and
  // sometimes a write from a value that requires grad after it, which gives x a history again.
  void detach_inplace(const Move& m) {
    const int x = (m.param & 1) ? differentiable(m.a) : any(m.a);
    if ((m.param >> 1) % 4 == 0) {
      Stmt retain;
      retain.kind = StmtKind::kRetainGrad;
      retain.args = {x};
      emit(retain);
    }
    Stmt s;
    s.kind = StmtKind::kDetachInplace;
    s.args = {x};
    s.record_flags = aliases_of(x);
    if (info_[x].base < 0) {  // a rough guess: reshapes and view() are views too
      info_[x].requires_grad = false;
      info_[x].is_leaf = true;
    }
    emit(s);
    if ((m.param >> 3) % 3 == 0 && writable(x)) {
      Stmt w;
      w.kind = StmtKind::kInplace;
      w.inplace = static_cast<InplaceKind>((m.param >> 5) % 3);
      w.args = {x, leaf(info_[x].shape, true)};
      w.record_flags = aliases_of(x);
      info_[x].requires_grad = true;
      info_[x].is_leaf = false;
      emit(w);
    }
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

  // ---- view ops and writes through them ----

  // A view op's arguments for an input of shape `in`: mostly valid, sometimes not (an index out
  // of range, a zero step, a wrong permutation), since both engines must refuse the same ones.
  void view_args(Stmt& s, const Shape& in, int64_t storage_size, Bits& r) {
    const int64_t rank = static_cast<int64_t>(in.size());
    auto dim = [&] { return rank == 0 || r.one_in(16) ? r.in(-1, rank) : r.below(rank); };
    auto size = [&](int64_t d) {
      return d >= 0 && d < rank ? in[d] : d < 0 && -d <= rank ? in[rank + d] : 1;
    };
    switch (s.view_op) {
      case ViewOp::kSelect: {
        const int64_t d = dim(), n = size(d);
        s.ints = {d, r.one_in(16) ? n : r.in(-n, n - 1)};
        break;
      }
      case ViewOp::kSlice: {
        const int64_t d = rank == 0 ? r.in(-1, 0) : r.below(rank), n = size(d);
        const int64_t start = r.one_in(4) ? r.in(-n, -1) : r.in(0, n);
        const int64_t end = r.one_in(4) ? n + r.in(0, 2) : r.in(start < 0 ? 0 : start, n);
        s.ints = {d, start, end, r.one_in(32) ? 0 : r.in(1, 3)};
        break;
      }
      case ViewOp::kNarrow: {
        const int64_t d = dim(), n = size(d), start = r.in(0, n);
        s.ints = {d, start, r.one_in(16) ? n - start + 1 : r.in(0, n - start)};
        break;
      }
      case ViewOp::kPermute: {
        std::vector<int64_t> dims(static_cast<size_t>(rank));
        for (int64_t d = 0; d < rank; ++d) dims[d] = d;
        for (int64_t d = rank - 1; d > 0; --d) std::swap(dims[d], dims[r.below(d + 1)]);
        if (r.one_in(16)) dims.push_back(0);  // refused
        s.shape = Shape(dims);
        break;
      }
      case ViewOp::kExpand: {
        Shape sizes;
        if (rank < 3 && r.one_in(3)) sizes.push_back(r.in(0, 3));  // a new leading dim
        for (int64_t d = 0; d < rank; ++d) {
          sizes.push_back(in[d] == 1 ? r.in(1, 3) : r.one_in(4) ? -1 : in[d]);
        }
        if (r.one_in(16) && rank > 0) sizes.back() += 1;  // refused, unless it was 1
        s.shape = sizes;
        break;
      }
      case ViewOp::kUnsqueeze:
        s.ints = {r.one_in(8) ? r.in(-rank - 1, -1) : r.in(0, rank)};
        break;
      case ViewOp::kSqueeze:
        if (r.one_in(2)) s.ints = {dim()};
        break;
      case ViewOp::kDiagonal: {
        int64_t d1 = r.below(std::max<int64_t>(rank, 1)), d2 = r.below(std::max<int64_t>(rank, 1));
        if (d1 == d2 && rank > 1) d2 = (d1 + 1) % rank;
        s.ints = {r.in(-1, 1), d1, d2};
        break;
      }
      case ViewOp::kUnfold: {
        const int64_t d = rank == 0 ? 0 : r.below(rank), n = rank == 0 ? 1 : in[d];
        s.ints = {d, r.one_in(16) ? n + 1 : r.in(1, std::max<int64_t>(n, 1)), r.in(1, 2)};
        break;
      }
      case ViewOp::kAsStrided: {
        // Inside the storage, which it may read beyond the input's own elements; strides of 0
        // and overlapping windows too (writes into them are refused). Of any input, one that may
        // read an element twice too (an expand, an unfold, an overlapping as_strided, or a view
        // of one): its gradient divides by the counts, as PyTorch's (Note [as_strided gradients
        // of overlapping inputs], ops/view_ops.cc).
        const int64_t out_rank = r.in(0, 2);
        Shape sizes, strides;
        int64_t extent = 0;
        for (int64_t d = 0; d < out_rank; ++d) {
          sizes.push_back(r.in(1, 3));
          strides.push_back(r.one_in(6) ? 0 : r.in(1, 3));
          extent += (sizes.back() - 1) * strides.back();
        }
        const int64_t room = storage_size - 1 - extent;
        if (room < 0) {  // shrink to fit: one element
          sizes = Shape(static_cast<size_t>(out_rank), 1);
          extent = 0;
        }
        s.shape = sizes;
        s.strides = strides;
        s.ints = {r.below(std::max<int64_t>(storage_size - extent, 1))};
        break;
      }
      case ViewOp::kSplit: {
        const int64_t d = dim();
        s.ints = {r.in(1, std::max<int64_t>(size(d), 1)), d};
        break;
      }
      case ViewOp::kChunk:
        s.ints = {r.in(1, 3), dim()};
        break;
      case ViewOp::kUnbind:
        s.ints = {dim()};
        break;
      case ViewOp::kT:
      case ViewOp::kAlias:
      case ViewOp::kContiguous:
        break;
    }
  }

  // Emits view op `op` of x (under no_grad when asked) and returns its results (none when it
  // would make none: an unbind of a size-0 dim).
  std::vector<int> make_view(int x, ViewOp op, bool no_grad, Bits& r) {
    Stmt s;
    s.kind = StmtKind::kViewOp;
    s.view_op = op;
    s.args = {x};
    s.flag = no_grad;
    view_args(s, info_[x].shape, info_[x].storage_size, r);
    // The results' shapes: the op on zeros of x's shape (as_strided: its sizes). One result
    // when it raises; later statements that use it are skipped.
    std::vector<Shape> shapes = {Shape{}};
    if (op == ViewOp::kAsStrided) {
      shapes = {s.shape};
    } else {
      try {
        NoGradGuard guard;
        const Tensor zeros = ops::zeros(info_[x].shape, DType::kFloat64);
        Stmt probe = s;
        probe.flag = false;
        shapes.clear();
        for (const Tensor& t : run_view_op(probe, zeros)) shapes.push_back(t.shape());
      } catch (const Error&) {
        shapes = {Shape{}};
      }
    }
    if (shapes.empty() || shapes.size() > 6) return {};
    const bool rg = info_[x].requires_grad && !no_grad;
    const bool copy = op == ViewOp::kContiguous;  // a copy unless x is contiguous: a new storage
    for (const Shape& shape : shapes) {
      s.results.push_back(new_value(shape, rg, copy ? -1 : info_[x].storage));
      info_.back().base = x;
    }
    emit(s);
    return s.results;
  }

  // The view ops, weighted: the partial ones (select, slice, narrow...) more often than those
  // that keep every element.
  ViewOp pick_view_op(Bits& r, bool partial) {
    static const ViewOp kPartial[] = {ViewOp::kSelect,    ViewOp::kSlice,    ViewOp::kSlice,
                                      ViewOp::kNarrow,    ViewOp::kDiagonal, ViewOp::kUnfold,
                                      ViewOp::kAsStrided, ViewOp::kSplit,    ViewOp::kChunk,
                                      ViewOp::kUnbind,    ViewOp::kSelect,   ViewOp::kExpand};
    static const ViewOp kWhole[] = {ViewOp::kPermute,   ViewOp::kT,       ViewOp::kExpand,
                                    ViewOp::kUnsqueeze, ViewOp::kSqueeze, ViewOp::kAlias,
                                    ViewOp::kContiguous};
    if (partial || r.one_in(2)) return kPartial[r.below(std::size(kPartial))];
    return kWhole[r.below(std::size(kWhole))];
  }

  // The rank a view op needs of its input (it raises below: made sometimes, not mostly).
  static size_t min_rank(ViewOp op) {
    switch (op) {
      case ViewOp::kSelect:
      case ViewOp::kSlice:
      case ViewOp::kNarrow:
      case ViewOp::kSplit:
      case ViewOp::kChunk:
      case ViewOp::kUnbind:
        return 1;
      case ViewOp::kDiagonal:
        return 2;
      default:
        return 0;
    }
  }

  // A source value for view op `op`: a recent value of the rank it needs (one in 16 any), often
  // a view already (views of views); for a write, often one with a history, so the write reaches
  // it through the view (a leaf that requires grad refuses it), and sometimes the same one.
  int view_source(const Move& m, ViewOp op, Bits& r, bool for_write) {
    const size_t rank = r.one_in(16) ? 0 : min_rank(op);
    auto fits = [&](int u) {
      return info_[u].shape.size() >= rank && (op != ViewOp::kT || info_[u].shape.size() <= 2) &&
             (!for_write || writable(u));
    };
    int v = -1;
    switch (r.below(4)) {
      case 0:
        v = newest(m.a, [&](int u) { return fits(u) && info_[u].base >= 0; });
        break;
      case 1:
        v = newest(m.a % 6, [&](int u) { return fits(u) && !info_[u].is_leaf; });
        break;
      case 2:
        v = newest(m.a % 6, [&](int u) { return fits(u) && info_[u].requires_grad == !for_write; });
        break;
      default:
        break;
    }
    if (v < 0) v = newest(m.a % 6, fits);
    if (v < 0 && !for_write) v = newest(m.a % 4, [](int) { return true; });
    return v;
  }

  void view_op(const Move& m) {
    Bits r(m);
    const ViewOp op = pick_view_op(r, false);
    const int x = view_source(m, op, r, false);
    if (x >= 0) make_view(x, op, r.one_in(5), r);
  }

  // A view (of a view, sometimes) and an in-place op through it or through its base, under
  // no_grad or not, with a source that is fresh, the target itself, or another view of the same
  // memory (partial overlaps, which PyTorch refuses). What PyTorch refuses is generated too:
  // writes into expanded views, into views of a split, into views made under no_grad, into views
  // of a leaf that requires grad.
  void view_write(const Move& m) {
    Bits r(m);
    const ViewOp op = pick_view_op(r, true);
    const int x = view_source(m, op, r, true);
    if (x < 0) return;
    std::vector<int> views = make_view(x, op, r.one_in(6), r);
    if (views.empty()) return;
    int v = views[r.below(static_cast<int64_t>(views.size()))];
    if (r.one_in(3)) {  // a view of the view
      ViewOp again = pick_view_op(r, false);
      if (info_[v].shape.size() < min_rank(again)) again = ViewOp::kUnsqueeze;
      const std::vector<int> more = make_view(v, again, r.one_in(8), r);
      if (!more.empty()) v = more[r.below(static_cast<int64_t>(more.size()))];
    }
    const int t = r.one_in(4) ? x : v;  // through the base, the view existing
    const Shape shape = info_[t].shape;
    int src = -1;
    switch (r.below(6)) {
      case 0:
        src = t;
        break;
      case 1:  // other views of the same memory
        src = views.size() > 1 ? views[r.below(static_cast<int64_t>(views.size()))]
                               : (t == x ? v : x);
        break;
      case 2:
        src = leaf(Shape{}, r.one_in(2));
        break;
      default: {
        Shape from = shape;  // sometimes broadcast: a row of it
        if (!from.empty() && r.one_in(3)) from.erase(from.begin());
        src = leaf(from, r.one_in(2));
        break;
      }
    }
    Stmt s;
    s.kind = StmtKind::kInplace;
    s.inplace = static_cast<InplaceKind>(r.below(3));
    s.args = {t, src};
    s.flag = r.one_in(3);
    s.record_flags = aliases_of(t);
    if (!s.flag && (info_[t].requires_grad || info_[src].requires_grad)) {
      for (int u = t; u >= 0; u = info_[u].base) {
        info_[u].requires_grad = true;
        info_[u].is_leaf = false;
      }
    }
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

rc::Gen<ConformanceSpec> program_spec_gen(bool hooks) {
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
  return rc::gen::exec([move, hooks] {
    ConformanceSpec spec;
    spec.ops = *proptests::program_gen();
    spec.moves = *rc::gen::scale(0.3, rc::gen::container<std::vector<Move>>(move));
    if (hooks) spec.hooks = *hook_moves_gen();
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
  ConformanceProgram program = b.take();
  add_hooks(program, spec.hooks);
  return program;
}

ConformanceProgram generate_program(uint64_t seed, int id, bool hooks) {
  const uint64_t mixed =
      seed * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(id) * 0xBF58476D1CE4E5B9ull;
  return build_program(program_spec_gen(hooks)(rc::Random(mixed), id % 101).value());
}

std::string program_title(uint64_t seed, int id) {
  return "program " + std::to_string(id) + " (seed " + std::to_string(seed) + ")";
}

void showValue(const ConformanceSpec& spec, std::ostream& os) {
  os << "\n" << to_text(build_program(spec));
}

const char* family_name(const Move& move) { return family_of(move).name; }

}  // namespace ag::proptests
