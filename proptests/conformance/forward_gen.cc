#include "proptests/conformance/forward_gen.h"

#include <map>
#include <stdexcept>

#include "ops/op_list.h"
#include "proptests/conformance/program_gen.h"

namespace ag::proptests {
namespace {

// Small random numbers from one 64-bit state (splitmix64).
class Rng {
 public:
  explicit Rng(uint64_t seed) : x_(seed) {}
  uint64_t next() {
    uint64_t z = (x_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int below(int n) { return n <= 0 ? 0 : static_cast<int>(next() % static_cast<uint64_t>(n)); }
  bool one_in(int n) { return below(n) == 0; }

 private:
  uint64_t x_;
};

// Applies `f` to every value id a statement names (results and reads; not a body's own).
template <typename F>
void map_ids(Stmt& s, F f) {
  for (std::vector<int>* list : {&s.results, &s.args, &s.instr.args, &s.outputs, &s.inputs,
                                 &s.grad_outputs, &s.record_flags, &s.record_grads}) {
    for (int& v : *list) {
      if (v >= 0) v = f(v);
    }
  }
}

// Renumbers the values in creation order (program.h).
void renumber(ConformanceProgram& p) {
  std::map<int, int> to;
  for (const Stmt& s : p.stmts) {
    for (int r : s.results) to.emplace(r, static_cast<int>(to.size()));
  }
  for (Stmt& s : p.stmts) map_ids(s, [&](int v) { return to.at(v); });
  p.num_values = static_cast<int>(to.size());
}

Instr op(const char* name, std::vector<int> args) {
  ops::OpId id = ops::OpId::kAdd;
  if (!ops::op_named(name, &id)) throw std::logic_error(std::string("no op ") + name);
  Instr in;
  in.op = op_of(id);
  in.args = std::move(args);
  return in;
}

// A body of pure ops over `n` arguments of shape `shape` (Note [Conformance forward mode]);
// ending in a sum when `scalar`.
std::vector<Instr> make_body(Rng& r, int n, const Shape& shape, bool scalar) {
  static const char* const kUnary[] = {"sin", "cos", "tanh", "exp", "sigmoid", "neg"};
  std::vector<Instr> body;
  int values = n;
  const int steps = 2 + r.below(4);
  for (int k = 0; k < steps; ++k) {
    const int a = r.below(values), b = r.below(values);
    const int dim = shape.empty() ? 0 : r.below(static_cast<int>(shape.size()));
    switch (r.below(6)) {
      case 0:
      case 1:
        body.push_back(op(kUnary[r.below(6)], {a}));
        break;
      case 2: {
        static const char* const kBinary[] = {"add", "sub", "mul"};
        body.push_back(op(kBinary[r.below(3)], {a, b}));
        break;
      }
      case 3: {
        static const char* const kScalar[] = {"mul_scalar", "add_scalar", "pow_scalar"};
        const int which = r.below(3);
        body.push_back(op(kScalar[which], {a}));
        body.back().scalar = which == 2 ? 2.0 + r.below(2) : (r.below(7) - 3) * 0.5;
        break;
      }
      default: {
        if (shape.empty()) {
          body.push_back(op("mul", {a, b}));
          break;
        }
        static const char* const kDim[] = {"softmax", "log_softmax", "cumsum"};
        body.push_back(op(kDim[r.below(3)], {a}));
        body.back().dim0 = dim;
        break;
      }
    }
    ++values;
  }
  // The last value depends on every argument.
  for (int i = 0; i < n; ++i) {
    body.push_back(op("mul", {values - 1, i}));
    ++values;
  }
  if (scalar) {
    body.push_back(op("sum", {values - 1}));
  } else if (!shape.empty() && r.one_in(3)) {
    body.push_back(op("sum_dim", {values - 1}));
    body.back().dim0 = r.below(static_cast<int>(shape.size()));
    body.back().keepdim = r.one_in(2);
  }
  return body;
}

class ForwardBuilder {
 public:
  ForwardBuilder(const ConformanceProgram& base, uint64_t seed)
      : base_(base), r_(seed), next_value_(base.num_values), next_seed_(seed % 100000 + 7) {}

  ConformanceProgram build() {
    // Where the level is exited: after the last statement, or (1 in 4) somewhere before.
    const int n = static_cast<int>(base_.stmts.size());
    const int exit_at = r_.one_in(4) ? r_.below(n + 1) : n;
    if (r_.one_in(10)) make_dual_outside_level();
    add({dual_level(true)});
    // An interior value made dual (1 in 4).
    int interior_at = r_.one_in(4) ? r_.below(n) : -1;
    for (int i = 0; i < n; ++i) {
      if (i == exit_at) {
        add({dual_level(false)});
        live_ = false;
      }
      Stmt s = base_.stmts[i];
      map_ids(s, [&](int v) { return renamed(v); });
      out_.stmts.push_back(s);
      if (s.kind == StmtKind::kLeaf && r_.below(3) != 0) {
        make_dual_of(s.results[0], s.shape);
      } else if (i >= interior_at && interior_at >= 0 && s.kind == StmtKind::kOp && live_) {
        make_interior_dual(s.results[0]);
        interior_at = -1;
      }
      if (s.kind == StmtKind::kInplace && r_.one_in(3)) unpack(s.args[0]);
      if (!s.results.empty() && s.kind != StmtKind::kLeaf && r_.one_in(3)) {
        unpack(s.results[static_cast<size_t>(r_.below(static_cast<int>(s.results.size())))]);
      }
    }
    // The last values made, unpacked at the end.
    std::vector<int> made;
    for (const Stmt& s : out_.stmts) {
      if (s.kind != StmtKind::kLeaf && s.kind != StmtKind::kUnpackDual) {
        made.insert(made.end(), s.results.begin(), s.results.end());
      }
    }
    for (size_t k = made.size() > 2 ? made.size() - 2 : 0; k < made.size(); ++k) unpack(made[k]);
    if (live_) add({dual_level(false)});
    if (r_.below(5) < 2) add_transform();
    if (r_.one_in(5)) add_transform();
    out_.num_values = next_value_;
    renumber(out_);
    return std::move(out_);
  }

 private:
  int renamed(int v) const {
    const auto it = renames_.find(v);
    return it == renames_.end() ? v : it->second;
  }
  void add(const Stmt& s) { out_.stmts.push_back(s); }
  int fresh() { return next_value_++; }

  static Stmt dual_level(bool enter) {
    Stmt s;
    s.kind = StmtKind::kDualLevel;
    s.flag = enter;
    return s;
  }

  int tangent_leaf(const Shape& shape) {
    Stmt s;
    s.kind = StmtKind::kLeaf;
    s.shape = shape;
    s.seed = next_seed_++;
    s.results = {fresh()};
    add(s);
    return s.results[0];
  }

  // v's dual, with a tangent leaf of `shape` (1 in 12 of another shape: PyTorch raises); later
  // statements read the dual.
  void make_dual_of(int v, const Shape& shape) {
    const bool wrong = r_.one_in(12);
    Shape tangent_shape = shape;
    if (wrong) tangent_shape.push_back(2);
    Stmt s;
    s.kind = StmtKind::kMakeDual;
    s.args = {v, tangent_leaf(tangent_shape)};
    s.results = {fresh()};
    add(s);
    if (!wrong && live_) renames_[v] = s.results[0];
    if (r_.one_in(8)) unpack(s.results[0]);
  }

  // A make_dual before the level is entered: PyTorch raises.
  void make_dual_outside_level() {
    static const Shape kShapes[] = {{3}, {2, 3}};
    const Shape& shape = kShapes[r_.below(2)];
    Stmt d;
    d.kind = StmtKind::kMakeDual;
    d.args = {tangent_leaf(shape), tangent_leaf(shape)};
    d.results = {fresh()};
    add(d);
  }

  // An interior value made dual: its tangent is the value's detached copy times -0.5, of its
  // shape whatever that is.
  void make_interior_dual(int v) {
    Stmt detach;
    detach.kind = StmtKind::kDetach;
    detach.args = {v};
    detach.results = {fresh()};
    add(detach);
    Stmt scaled;
    scaled.kind = StmtKind::kOp;
    scaled.instr = op("mul_scalar", {detach.results[0]});
    scaled.instr.scalar = -0.5;
    scaled.results = {fresh()};
    add(scaled);
    Stmt s;
    s.kind = StmtKind::kMakeDual;
    s.args = {v, scaled.results[0]};
    s.results = {fresh()};
    add(s);
    renames_[v] = s.results[0];
  }

  void unpack(int v) {
    Stmt s;
    s.kind = StmtKind::kUnpackDual;
    s.args = {renamed(v)};
    s.results = {fresh(), fresh()};
    add(s);
  }

  void add_transform() {
    static const TransformKind kKinds[] = {TransformKind::kJvp,     TransformKind::kVjp,
                                           TransformKind::kJacrev,  TransformKind::kJacfwd,
                                           TransformKind::kHessian, TransformKind::kHvp};
    Stmt s;
    s.kind = StmtKind::kTransform;
    s.transform = kKinds[r_.below(6)];
    const bool one_primal =
        s.transform == TransformKind::kHessian || s.transform == TransformKind::kHvp;
    s.num_primals = one_primal ? 1 : 1 + r_.below(2);
    static const Shape kShapes[] = {{3}, {2, 3}, {2, 2}, {}, {4}};
    const Shape shape = kShapes[r_.below(5)];
    for (int i = 0; i < s.num_primals; ++i) s.args.push_back(tangent_leaf(shape));
    if (s.transform == TransformKind::kJvp) {
      for (int i = 0; i < s.num_primals; ++i) s.args.push_back(tangent_leaf(shape));
    }
    if (s.transform == TransformKind::kHvp) s.args.push_back(tangent_leaf(shape));
    s.body = make_body(r_, s.num_primals, shape, one_primal);
    if (s.transform == TransformKind::kVjp) {
      // The cotangent has the output's shape: the body's, unless it ends in a sum_dim.
      Shape out = shape;
      const Instr& last = s.body.back();
      if (proptests::op_name(last.op) == std::string("sum_dim")) {
        out.erase(out.begin() + last.dim0);
        if (last.keepdim) out.insert(out.begin() + last.dim0, 1);
      }
      s.args.push_back(tangent_leaf(out));
    }
    for (int k = 0; k < num_results(s.transform, s.num_primals); ++k) s.results.push_back(fresh());
    add(s);
  }

  const ConformanceProgram& base_;
  Rng r_;
  ConformanceProgram out_;
  int next_value_;
  uint64_t next_seed_;
  bool live_ = true;
  std::map<int, int> renames_;  // a value -> its dual, read in its place
};

}  // namespace

ConformanceProgram generate_forward_program(uint64_t seed, int id) {
  const uint64_t mixed =
      seed * 0xD1B54A32D192ED03ull ^ static_cast<uint64_t>(id) * 0x8CB92BA72F3D8DD7ull;
  return ForwardBuilder(generate_program(seed, id), mixed).build();
}

int tangents_recorded(const ConformanceProgram& p, const Records& records) {
  int n = 0;
  for (size_t i = 0; i < p.stmts.size(); ++i) {
    const Stmt& s = p.stmts[i];
    std::vector<int> tangents;
    if (s.kind == StmtKind::kUnpackDual) tangents = {s.results.at(1)};
    if (s.kind == StmtKind::kTransform) tangents = s.results;
    for (int t : tangents) {
      const std::string head = "s" + std::to_string(i) + " v" + std::to_string(t) + " ";
      for (const std::string& l : records.lines) {
        n += l.rfind(head, 0) == 0 && l.find(" = ") != std::string::npos;
      }
    }
  }
  return n;
}

}  // namespace ag::proptests
