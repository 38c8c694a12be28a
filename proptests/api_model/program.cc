// Note [Expected gradients] (program.h).
#include "proptests/api_model/program.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <type_traits>

namespace ag::proptests {
namespace {

template <typename T>
using Vals = std::vector<std::vector<Val<T>>>;  // [node][output]

template <typename T>
Val<T> inplace_result(OpKind kind, const Val<T>& self, const Val<T>& other) {
  const Val<T> o = expand(other, self.shape);
  switch (kind) {
    case OpKind::kAddInplace:
      return binary(self, o, [](const T& x, const T& y) { return x + y; });
    case OpKind::kMulInplace:
      return binary(self, o, [](const T& x, const T& y) { return x * y; });
    case OpKind::kCopyInplace:
      return o;
    default:
      throw std::logic_error("inplace_result: not an in-place op");
  }
}

// The forward of every kind but kLeaf and kGrad, at scalar type T.
template <typename T>
std::vector<Val<T>> apply_op(OpKind kind, const OpAttrs& a, const std::vector<Val<T>>& in) {
  auto un = [&](auto f) { return std::vector<Val<T>>{unary(in[0], f)}; };
  auto bin = [&](auto f) { return std::vector<Val<T>>{binary(in[0], in[1], f)}; };
  if (const proptests::OpTraits* t = unary_traits(kind)) {
    // An elementwise unary op: its row's value and derivatives (Note [Op traits]). Those that
    // read their result evaluate here only at double (eval_node's result_op at every level).
    return un([t](const T& x) { return taylor<0>(t->d, x); });
  }
  switch (kind) {
    case OpKind::kAdd:
      return bin([](const T& x, const T& y) { return x + y; });
    case OpKind::kSub:
      return bin([](const T& x, const T& y) { return x - y; });
    case OpKind::kMul:
    case OpKind::kCustomMul:
      return bin([](const T& x, const T& y) { return x * y; });
    case OpKind::kDiv:
      return bin([](const T& x, const T& y) { return x / y; });
    case OpKind::kAddScalar:
      return un([&](const T& x) { return x + T(a.scalar); });
    case OpKind::kMulScalar:
      return un([&](const T& x) { return x * T(a.scalar); });
    case OpKind::kPowScalar:
      return un([&](const T& x) { return pow_of(x, a.scalar); });
    case OpKind::kSum:
      return {sum_all(in[0])};
    case OpKind::kSumDim:
      return {sum_dim(in[0], a.dim0, a.keepdim)};
    case OpKind::kMean:
      return {scale(sum_all(in[0]), 1.0 / static_cast<double>(count(in[0].shape)))};
    case OpKind::kMeanDim:
      return {
          scale(sum_dim(in[0], a.dim0, a.keepdim), 1.0 / static_cast<double>(in[0].shape[a.dim0]))};
    case OpKind::kReshape:
      return {reshape(in[0], a.shape)};
    case OpKind::kTranspose:
      return {transpose(in[0], a.dim0, a.dim1)};
    case OpKind::kMatmul:
      return {matmul(in[0], in[1])};
    case OpKind::kLinear:
      return {linear(in[0], in[1], in.size() > 2 ? &in[2] : nullptr)};
    case OpKind::kClone:
      return {in[0]};
    case OpKind::kAddInplace:
    case OpKind::kMulInplace:
    case OpKind::kCopyInplace:
      return {inplace_result(kind, in[0], in[1])};
    case OpKind::kStridedView:
      return {gather(in[0], a.shape, *a.index)};
    case OpKind::kInplaceOnView: {
      const Val<T> written = inplace_result(a.inner, gather(in[0], a.shape, *a.index), in[1]);
      Val<T> out = in[0];
      for (size_t k = 0; k < out.v.size(); ++k) {
        const int64_t from = (*a.written_from)[k];
        if (from >= 0) out.v[k] = written.v[from];
      }
      return {out};
    }
    case OpKind::kSplit: {
      std::vector<Val<T>> out;
      for (const auto& [shape, index] : *a.parts) out.push_back(gather(in[0], shape, index));
      return out;
    }
    case OpKind::kCustomTwo:
      return {binary(in[0], in[1], [](const T& x, const T& y) { return x * y; }),
              binary(in[0], in[1], [](const T& x, const T& y) { return x + y; })};
    default:  // kLeaf, kGrad, and the list's ops the model does not have (the traits table)
      break;
  }
  throw std::logic_error("apply_op: no forward for this kind");
}

bool reads_result(OpKind kind) {
  const proptests::OpTraits* t = unary_traits(kind);
  return t != nullptr && t->saves == proptests::Saves::kResult;
}

// The derivative h(y) an op's formula computes from its result y, the row's d[1]: read at c * y
// when the saved result unpacks scaled (Note [Model saved-tensor hooks], model.h).
template <typename T>
T result_derivative(OpKind kind, const T& y, double c) {
  return taylor<1>(unary_traits(kind)->d, c == 1.0 ? y : T(c) * y);
}

// y = f(x) + delta, with the derivative h(y) its formula computes from y.
template <typename T>
T result_op(OpKind kind, const T& x, const T& delta, double c = 1.0) {
  const proptests::OpTraits* t = unary_traits(kind);
  return from_result(
      x, delta, [t](double v) { return t->f(v); },
      [kind, c](const auto& y) { return result_derivative(kind, y, c); });
}

template <typename T>
double primal(const T& x) {
  if constexpr (std::is_same_v<T, double>) {
    return x;
  } else {
    return primal(x.v);
  }
}

// An op whose saved values unpack times c (Note [Model saved-tensor hooks], model.h): its
// formulas read c * x, so its derivative is the op's at the scaled inputs; its value stays the
// one at the inputs themselves (a constant shift, which changes no derivative).
template <typename T>
std::vector<Val<T>> apply_scaled(OpKind kind, const OpAttrs& a, const std::vector<Val<T>>& in,
                                 double c) {
  if (c == 1.0) return apply_op<T>(kind, a, in);
  std::vector<Val<T>> scaled = in;
  for (Val<T>& v : scaled) {
    for (T& x : v.v) x += T((c - 1.0) * primal(x));
  }
  std::vector<Val<T>> out = apply_op<T>(kind, a, scaled);
  const std::vector<Val<T>> plain = apply_op<T>(kind, a, in);
  for (size_t k = 0; k < out.size(); ++k) {
    for (size_t e = 0; e < out[k].v.size(); ++e) {
      out[k].v[e] += T(primal(plain[k].v[e]) - primal(out[k].v[e]));
    }
  }
  return out;
}

// A tracked input's value: its producer's value shifted by what was written behind autograd's
// back since (Note [Expected gradients]).
// The derivative of x's value along the innermost Dual level (Note [Tangents of gradients]).
template <typename T>
void set_tangent_part(T& x, double t) {
  if constexpr (DualDepth<T>::value == 1) {
    x.d = t;
  } else if constexpr (DualDepth<T>::value > 1) {
    set_tangent_part(x.v, t);
  }
}

// With `level` > 0 the innermost Dual level is the tangent at that dual level: the input's value
// moves along the tangent it had when the op ran, not along its producer's (Note [Tangents of
// gradients]).
template <typename T>
Val<T> input_value(const ApiProgram& p, const Use& u, const Vals<T>& vals, int level = 0) {
  Val<T> out;
  if (!u.tracked) {
    out = lift<T>(u.shape, u.snapshot);
  } else {
    out = vals[u.ref.node][u.ref.slot];
    const std::vector<double>& recorded = p.value(u.ref);
    out.shape = u.shape;
    for (size_t i = 0; i < out.v.size(); ++i) out.v[i] += T(u.snapshot[i] - recorded[i]);
  }
  if (level > 0) {
    const bool has = u.has_tangent_at(level) && !u.tangent_unknown;
    for (size_t i = 0; i < out.v.size(); ++i) set_tangent_part(out.v[i], has ? u.tangent[i] : 0.0);
  }
  return out;
}

// A perturbation: `delta` added to one element of a node's output wherever it is evaluated.
// An enclosing derivative's seed must survive when an inner one re-evaluates that node.
template <typename T>
struct Seed {
  Ref at;
  size_t elem;
  T delta;
};
template <typename T>
using Seeds = std::vector<Seed<T>>;

// Note [Enclosing hooks' factors]
// A derivative scales the tangent of a node's value by the factors of the hooks at that node
// (GradDef::scale) after it evaluates the node. A create_graph gradient inside it re-evaluates the
// nodes of its own cone from their inputs, which drops the factors the enclosing derivatives put
// on those values' tangents; yet a gradient that flows back through the node in the enclosing
// backward call passes the node's hooks there (a pre-hook on t.grad_fn scales every path through
// t, the ones through a create_graph gradient's saved values of t too). So each level hands the
// next one its Rescale, which the inner level applies to the primal part of each node it
// re-evaluates (before an op whose formula reads its result reads it), and then its own factors
// to the tangent part, never to its target's: that tangent is the seed, as at the level itself,
// where the target is not re-evaluated.
template <typename T>
using Rescale = std::function<void(int node, std::vector<Val<T>>& out)>;

// Applies the enclosing levels' factors to the primal part of node n's values.
template <typename T>
void rescale_primal(const Rescale<T>& outer, int n, std::vector<Val<Dual<T>>>& out) {
  if (!outer) return;
  std::vector<Val<T>> primal;
  for (const Val<Dual<T>>& v : out) {
    primal.push_back({v.shape, {}});
    for (const Dual<T>& x : v.v) primal.back().v.push_back(x.v);
  }
  outer(n, primal);
  for (size_t s = 0; s < out.size(); ++s) {
    for (size_t k = 0; k < out[s].v.size(); ++k) out[s].v[k].v = primal[s].v[k];
  }
}

template <typename T>
Val<T> vjp_at(const ApiProgram& p, const GradDef& def, const Vals<T>& vals, const Seeds<T>& seeds,
              const Rescale<T>& outer, int level = 0);

// Node n's values at level Dual<T>, with the enclosing levels' factors (`outer`, Note [Enclosing
// hooks' factors]); `rescale` is this level's, for a create_graph gradient evaluated inside.
template <typename T>
std::vector<Val<Dual<T>>> eval_node(const ApiProgram& p, int n, const Vals<Dual<T>>& vals,
                                    const Seeds<Dual<T>>& seeds, const Rescale<Dual<T>>& rescale,
                                    const Rescale<T>& outer, int level) {
  using D = Dual<T>;
  const Node& node = p.node(n);
  std::vector<Val<D>> out;
  if (node.kind == OpKind::kLeaf) {
    out = {lift<D>(node.out_shapes[0], std::vector<double>(count(node.out_shapes[0]), 0.0))};
  } else if (node.kind == OpKind::kGrad) {
    if constexpr (DualDepth<D>::value < ApiProgram::kMaxDepth) {
      out = {vjp_at<D>(p, node.grad, vals, seeds, rescale)};
    } else {
      throw std::logic_error("eval_node: gradients nested deeper than ApiProgram::kMaxDepth");
    }
  } else if (reads_result(node.kind)) {  // Note [Derivatives read from the result]
    // y = f(x) + delta at the primal level, rescaled, then the tangent h(y) dx + d(delta).
    const Val<D> x = input_value(p, node.inputs[0], vals, level);
    std::vector<D> delta(x.v.size(), D(0.0));
    for (const Seed<D>& s : seeds) {
      if (s.at.node == n) delta[s.elem] += s.delta;
    }
    std::vector<Val<T>> y{{x.shape, {}}};
    for (size_t e = 0; e < x.v.size(); ++e) {
      y[0].v.push_back(result_op(node.kind, x.v[e].v, delta[e].v, node.saved_scale));
    }
    if (outer) outer(n, y);
    out = {{x.shape, {}}};
    for (size_t e = 0; e < x.v.size(); ++e) {
      const T& ye = y[0].v[e];
      out[0].v.push_back(
          D(ye, result_derivative(node.kind, ye, node.saved_scale) * x.v[e].d + delta[e].d));
    }
    return out;
  } else {
    std::vector<Val<D>> in;
    in.reserve(node.inputs.size());
    for (const Use& u : node.inputs) in.push_back(input_value(p, u, vals, level));
    out = apply_scaled<D>(node.kind, node.attrs, in, node.saved_scale);
  }
  for (const Seed<D>& s : seeds) {
    if (s.at.node == n) out[s.at.slot].v[s.elem] += s.delta;
  }
  rescale_primal(outer, n, out);
  return out;
}

// The nodes a definition reads (its roots and incoming gradients): 1 + the last one.
int end_of(const GradDef& def) {
  int end = 0;
  for (const Use& r : def.roots) end = std::max(end, r.ref.node + 1);
  for (const Use& g : def.gos) {
    if (g.tracked) end = std::max(end, g.ref.node + 1);
  }
  return end;
}

// The nodes whose value a node reads directly.
template <typename F>
void for_each_value_dep(const Node& node, F f) {
  const std::vector<Use>* lists[] = {&node.inputs, &node.grad.roots, &node.grad.gos};
  for (const std::vector<Use>* list : lists) {
    for (const Use& u : *list) {
      if (u.tracked) f(u.ref.node);
    }
  }
}

// The nodes between the target and the roots: those whose value depends on the target and that
// the roots' values depend on, in order. Only these change when the target is perturbed.
std::vector<int> cone(const ApiProgram& p, const GradDef& def) {
  const int target = def.target.node, end = end_of(def);
  std::vector<char> upstream(end, 0);  // the roots depend on it
  for (const Use& r : def.roots) upstream[r.ref.node] = 1;
  for (int n = end - 1; n > target; --n) {
    if (upstream[n]) for_each_value_dep(p.node(n), [&](int d) { upstream[d] = 1; });
  }
  std::vector<char> downstream(end, 0);  // depends on the target
  std::vector<int> out;
  downstream[target] = 1;
  for (int n = target + 1; n < end; ++n) {
    for_each_value_dep(p.node(n), [&](int d) { downstream[n] = downstream[n] || downstream[d]; });
    if (downstream[n] && upstream[n]) out.push_back(n);
  }
  return out;
}

template <typename T>
Val<Dual<T>> to_dual(const Val<T>& x) {
  Val<Dual<T>> out{x.shape, {}};
  out.v.reserve(x.v.size());
  for (const T& e : x.v) out.v.push_back(Dual<T>(e, T(0.0)));
  return out;
}

// `vals` hold every node's value at level T, `seeds` the perturbations they include.
template <typename T>
Val<T> vjp_at(const ApiProgram& p, const GradDef& def, const Vals<T>& vals, const Seeds<T>& seeds,
              const Rescale<T>& outer, int level) {
  using D = Dual<T>;
  // This level's factors, on the tangent part (Note [Enclosing hooks' factors]).
  const auto own = [&](int n, std::vector<Val<D>>& out) {
    for (size_t s = 0; s < out.size(); ++s) {
      const Ref at{n, static_cast<int>(s)};
      if (at.node == def.target.node && at.slot == def.target.slot) continue;  // the seed's own
      auto it = def.scale.find(at);
      if (it == def.scale.end() || it->second == 1.0) continue;
      for (D& x : out[s].v) x.d = x.d * T(it->second);
    }
  };
  // What a create_graph gradient inside applies to the values it re-evaluates.
  const Rescale<D> rescale = [&](int n, std::vector<Val<D>>& out) {
    rescale_primal(outer, n, out);
    own(n, out);
  };
  const Ref t = def.target;
  const int end = end_of(def);
  Val<T> out{p.shape(t), std::vector<T>(count(p.shape(t)), T(0.0))};
  if (t.node >= end) return out;  // no root can depend on it
  std::vector<Val<T>> gos;
  for (const Use& g : def.gos) gos.push_back(input_value(p, g, vals, level));
  Vals<D> dv(end);
  for (int n = 0; n < end; ++n) {
    for (const Val<T>& v : vals[n]) dv[n].push_back(to_dual(v));
  }
  const std::vector<int> nodes = cone(p, def);
  const Vals<D> pristine = dv;
  Seeds<D> inner;
  for (const Seed<T>& s : seeds) inner.push_back({s.at, s.elem, D(s.delta, T(0.0))});
  inner.push_back({t, 0, D(T(0.0), T(1.0))});
  for (size_t e = 0; e < out.v.size(); ++e) {
    dv[t.node][t.slot].v[e].d = T(1.0);
    inner.back().elem = e;
    for (int n : nodes) {
      dv[n] = eval_node<T>(p, n, dv, inner, rescale, outer, level);
      own(n, dv[n]);
    }
    T acc(0.0);
    for (size_t r = 0; r < def.roots.size(); ++r) {
      const Ref root = def.roots[r].ref;
      const Val<D>& rv = dv[root.node][root.slot];
      for (size_t k = 0; k < rv.v.size(); ++k) acc += gos[r].v[k] * rv.v[k].d;
    }
    out.v[e] = acc * T(def.target_scale);
    dv[t.node][t.slot] = pristine[t.node][t.slot];
    for (int n : nodes) dv[n] = pristine[n];
  }
  return out;
}

Vals<double> recorded_values(const ApiProgram& p, int end) {
  Vals<double> vals(end);
  for (int n = 0; n < end; ++n) {
    const Node& node = p.node(n);
    for (size_t s = 0; s < node.values.size(); ++s) {
      vals[n].push_back({node.out_shapes[s], node.values[s]});
    }
  }
  return vals;
}

}  // namespace

std::vector<Val<double>> ApiProgram::forward(OpKind kind, const OpAttrs& attrs,
                                             const std::vector<Use>& inputs) {
  std::vector<Val<double>> in;
  for (const Use& u : inputs) in.push_back({u.shape, u.snapshot});
  return apply_op<double>(kind, attrs, in);
}

std::vector<std::vector<double>> ApiProgram::jvp(OpKind kind, const OpAttrs& attrs,
                                                 const std::vector<Use>& inputs,
                                                 const std::vector<std::vector<double>>& tangents) {
  std::vector<Val<Dual<double>>> in;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Val<Dual<double>> v{inputs[k].shape, {}};
    for (size_t i = 0; i < inputs[k].snapshot.size(); ++i) {
      const double t = tangents[k].empty() ? 0.0 : tangents[k][i];
      v.v.push_back(Dual<double>(inputs[k].snapshot[i], t));
    }
    in.push_back(std::move(v));
  }
  std::vector<Val<Dual<double>>> y;
  if (reads_result(kind)) {  // the row's derivative reads the result (as input_vjp does)
    y = {{in[0].shape, {}}};
    for (const Dual<double>& x : in[0].v) y[0].v.push_back(result_op(kind, x, Dual<double>(0.0)));
  } else {
    y = apply_op<Dual<double>>(kind, attrs, in);
  }
  std::vector<std::vector<double>> out;
  for (const Val<Dual<double>>& v : y) {
    out.emplace_back();
    for (const Dual<double>& x : v.v) out.back().push_back(x.d);
  }
  return out;
}

int ApiProgram::add(Node node) {
  if (node.kind == OpKind::kGrad) {
    node.depth = vjp_depth(node.grad);
    node.out_shapes = {shape(node.grad.target)};
    node.values = {vjp(node.grad)};
  } else if (node.kind == OpKind::kLeaf) {
    node.values = {std::vector<double>(count(node.out_shapes[0]), 0.0)};
  } else {
    node.out_shapes.clear();
    node.values.clear();
    for (Val<double>& v : forward(node.kind, node.attrs, node.inputs)) {
      node.out_shapes.push_back(std::move(v.shape));
      node.values.push_back(std::move(v.v));
    }
  }
  nodes_.push_back(std::make_shared<const Node>(std::move(node)));
  released_.push_back(Released::kNo);
  return size() - 1;
}

const Watch& ApiProgram::watch(int n) const {
  static const Watch none;
  auto it = watch_.find(n);
  return it == watch_.end() ? none : it->second;
}

std::vector<std::pair<int, Ref>> ApiProgram::edges(int n) const {
  std::vector<std::pair<int, Ref>> out;
  const Node& node = *nodes_[n];
  if (node.kind == OpKind::kGrad) {
    for (size_t i = 0; i < node.grad_edges.size(); ++i) out.emplace_back(i, node.grad_edges[i]);
    return out;
  }
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i].tracked) out.emplace_back(i, node.inputs[i].ref);
  }
  return out;
}

std::vector<double> ApiProgram::vjp(const GradDef& def) const {
  const int end = std::max(end_of(def), def.target.node + 1);
  return vjp_at<double>(*this, def, recorded_values(*this, end), {}, nullptr).v;
}

std::vector<int> ApiProgram::cone_of(const GradDef& def) const {
  if (def.target.node >= end_of(def)) return {};
  return cone(*this, def);
}

std::vector<double> ApiProgram::vjp_along_tangents(const GradDef& def, int level) const {
  const int end = std::max(end_of(def), def.target.node + 1);
  const Vals<double> recorded = recorded_values(*this, end);
  Vals<Dual<double>> vals(end);
  for (int n = 0; n < end; ++n) {
    for (const Val<double>& v : recorded[n]) vals[n].push_back(to_dual(v));
  }
  const Val<Dual<double>> g = vjp_at<Dual<double>>(*this, def, vals, {}, nullptr, level);
  std::vector<double> out;
  for (const Dual<double>& x : g.v) out.push_back(x.d);
  return out;
}

std::vector<std::vector<double>> ApiProgram::input_vjp(
    int n, const std::vector<std::vector<double>>& gos) const {
  using D = Dual<double>;
  const Node& node = *nodes_[n];
  std::vector<Val<D>> in;
  for (const Use& u : node.inputs) in.push_back(to_dual(Val<double>{u.shape, u.snapshot}));
  std::vector<std::vector<double>> out;
  for (size_t i = 0; i < in.size(); ++i) {
    std::vector<double> g(in[i].v.size(), 0.0);
    for (size_t e = 0; e < g.size(); ++e) {
      in[i].v[e].d = 1.0;
      std::vector<Val<D>> y;
      if (reads_result(node.kind)) {  // as eval_node: the formula reads the result
        y = {{in[0].shape, {}}};
        for (const D& x : in[0].v) {
          y[0].v.push_back(result_op(node.kind, x, D(0.0), node.saved_scale));
        }
      } else {
        y = apply_scaled<D>(node.kind, node.attrs, in, node.saved_scale);
      }
      in[i].v[e].d = 0.0;
      for (size_t s = 0; s < y.size() && s < gos.size(); ++s) {
        for (size_t k = 0; k < gos[s].size() && k < y[s].v.size(); ++k) {
          g[e] += gos[s][k] * y[s].v[k].d;
        }
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

int ApiProgram::vjp_depth(const GradDef& def) const {
  int inner = 0;
  if (def.target.node < end_of(def)) {
    for (int n : cone(*this, def)) inner = std::max(inner, nodes_[n]->depth);
  }
  return 1 + inner;
}

const proptests::OpTraits* unary_traits(OpKind kind) {
  if (kind <= OpKind::kLeaf || kind >= OpKind::kStridedView) return nullptr;
  const proptests::OpTraits& t =
      proptests::traits(static_cast<ops::OpId>(static_cast<int>(kind) - 1));
  return t.unary_elementwise() ? &t : nullptr;
}

const char* op_name(OpKind kind) {
  switch (kind) {
    case OpKind::kLeaf:
      return "AccumulateGrad";
    case OpKind::kAdd:
      return "add";
    case OpKind::kSub:
      return "sub";
    case OpKind::kMul:
      return "mul";
    case OpKind::kDiv:
      return "div";
    case OpKind::kAddScalar:
      return "add";
    case OpKind::kMulScalar:
      return "mul";
    case OpKind::kPowScalar:
      return "pow";
    case OpKind::kSum:
      return "sum";
    case OpKind::kSumDim:
      return "sum";
    case OpKind::kMean:
      return "mean";
    case OpKind::kMeanDim:
      return "mean";
    case OpKind::kReshape:
      return "reshape";
    case OpKind::kTranspose:
      return "transpose";
    case OpKind::kMatmul:
      return "matmul";
    case OpKind::kLinear:
      return "linear";
    case OpKind::kClone:
      return "clone";
    case OpKind::kAddInplace:
      return "add_";
    case OpKind::kMulInplace:
      return "mul_";
    case OpKind::kCopyInplace:
      return "copy_";
    case OpKind::kStridedView:
      return "view";
    case OpKind::kInplaceOnView:
      return "CopySlices";
    case OpKind::kCustomMul:
      return "CMul";
    case OpKind::kCustomTwo:
      return "Two";
    case OpKind::kGrad:
      return "grad";
    default:  // the list's other ops
      break;
  }
  if (kind > OpKind::kLeaf && kind < OpKind::kStridedView) {
    return ops::op_name(static_cast<ops::OpId>(static_cast<int>(kind) - 1));
  }
  return "?";
}

}  // namespace ag::proptests
