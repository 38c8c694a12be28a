// The model's backward() and grad(): which nodes a call runs, what they unpack, when the call
// must raise, what every gradient is, and how `.grad` accumulates. Deliberate differences from
// PyTorch are the engine's documented ones (proptests/api_model/README.md).
#include <algorithm>
#include <set>

#include "proptests/api_model/model.h"
#include "proptests/api_model/op_rules.h"

namespace ag::proptests {

// One call's walk of the recorded graph.
struct Model::BackwardWalk {
  std::vector<Use> roots, gos;
  std::vector<int> go_impls;        // -1: implicit ones
  std::vector<Ref> targets;         // the requested edges
  bool all = false;                 // backward() without inputs: everything reachable runs
  bool all_only_to_leaves = false;  // ... but only what reaches a leaf that wants it computes
  std::vector<char> reachable, needed;
  // Needed only as a backward(inputs=...) input's own node (PyTorch issue 92331), whose
  // PyTorch node may be only the last of the ops the model's node stands for.
  std::vector<char> own_only;
  std::vector<char> to_leaf;  // leads to a leaf that requires grad now (or was moved: it raises)
  // backward() without inputs: the edges of tensors that retain grad (their own slot only), and
  // the nodes a reachable node feeds along one of them.
  std::set<Ref> retained_edges;
  std::vector<char> fed_retained;
  // backward() without inputs (all_only_to_leaves): the nodes with a post-hook, which compute
  // every tracked input's gradient, and the nodes (not leaves) those gradients reach, which then
  // run (Note [Post-hooks see every executed gradient], engine/hooks.h).
  std::vector<char> post_hooked, fed_by_post_hooks;
  std::set<Ref> reached_edges;  // root edges and the edges of every reachable node
  std::map<Ref, double> scale;  // per edge, the factors of its live hooks (Note [Model hooks])

  // The gradient at t, with the hooks' factors: t's own scaled by target_scale.
  GradDef def(const Ref& t, double target_scale) const {
    return {roots, gos, t, scale, target_scale, planned()};
  }
  bool is_target(const Ref& e) const {
    return std::find(targets.begin(), targets.end(), e) != targets.end();
  }
  // The nodes recorded when the call began; the gradients it records come after them.
  int planned() const { return static_cast<int>(reachable.size()); }
  bool is_target_node(int n) const {
    return std::any_of(targets.begin(), targets.end(), [&](const Ref& t) { return t.node == n; });
  }
  bool is_root(const Ref& e) const {
    return std::any_of(roots.begin(), roots.end(), [&](const Use& r) { return r.ref == e; });
  }
  // Per edge, not per node (a multi-output node's sibling outputs may lie on no path): the gradient
  // along e is needed iff e is requested or leads to a node on a path to a requested edge.
  // backward() without inputs: every edge, or (all_only_to_leaves) those leading to a leaf that
  // requires grad now.
  bool edge_needed(const Ref& e) const {
    if (all) return !all_only_to_leaves || to_leaf[e.node] || retained_edges.count(e) > 0;
    return is_target(e) || needed[e.node];
  }
  // Whether node n, when it runs, computes the gradient along its (tracked) input edge e: where
  // it is needed, and in backward() without inputs every one of a node with a post-hook, whose
  // grad_inputs hold them as PyTorch's do.
  bool computes(int n, const Ref& e) const {
    return edge_needed(e) || (all && all_only_to_leaves && post_hooked[n]);
  }
  // Whether node n is called: it gets a gradient.
  bool runs(int n) const {
    if (!all) return needed[n];
    if (!reachable[n]) return false;
    if (!all_only_to_leaves || to_leaf[n] || fed_retained[n] || fed_by_post_hooks[n]) return true;
    return std::any_of(roots.begin(), roots.end(), [&](const Use& r) { return r.ref.node == n; });
  }
};

namespace {

bool bit(uint32_t mask, size_t i) { return (mask >> i) & 1u; }

// Whether PyTorch may record this op as several nodes, the last a reshape that saves nothing
// (matmul of batched or 1-D operands, linear of a batched input): run on its own (own_only), it
// may unpack nothing.
bool may_end_in_a_view(const Node& node) {
  return (node.kind == OpKind::kMatmul && node.attrs.dim0 == 0) || node.kind == OpKind::kLinear;
}

// Whether node n's backward unpacks slot s in a call that needs the edges `needed`. The engine
// evaluates only the formulas of needed edges and unpacks only what they read (a constant
// formula reads nothing); PyTorch unpacks every saved value of a node that runs.
template <typename EdgeNeeded>
bool unpacks(const Semantics& sem, const Node& node, const SavedSlot& s, EdgeNeeded edge_needed) {
  if (node.unpack_all || !sem.unpacks_only_what_formulas_read) return true;
  const uint32_t constant = op_rules(node.kind, node.attrs).constant_formulas;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Use& in = node.inputs[i];
    if (bit(s.used_by & ~constant, i) && in.tracked && edge_needed(in.ref)) return true;
  }
  return false;
}

void raise_or_maybe(Outcome& out, bool certain, const std::string& rule) {
  if (certain) {
    if (out.expect != Expect::kRaise) out.rule = rule;
    out.expect = Expect::kRaise;
  } else if (out.expect == Expect::kOk) {
    out.expect = Expect::kMaybe;
    out.rule = rule;
  }
}

}  // namespace

Outcome Model::validate(const char* api, const CallArgs& args) {
  const std::string a = api;
  for (size_t r = 0; r < args.roots.size(); ++r) {
    const int i = impl_of(args.roots[r]);
    if (!requires_grad(i)) return Outcome::raise(a + ": a root does not require grad");
    const int g = args.grad_tensors.empty() ? -1 : args.grad_tensors[r];
    if (g < 0 && count(impls_[i].shape) != 1) {
      return Outcome::raise(a + ": grad can be implicitly created only for scalar outputs");
    }
    if (g >= 0 && shape(g) != impls_[i].shape) return Outcome::raise(a + ": mismatch in shape");
  }
  for (int name : args.inputs) {
    const int i = impl_of(name);
    if (!requires_grad(i)) {
      return Outcome::raise(a + ": one of the differentiated tensors does not require grad");
    }
    // backward() retains a non-leaf input's gradient before it checks the next input.
    if (a == "backward") retain(i);
  }
  return {};
}

Model::BackwardWalk Model::plan(const CallArgs& args, const std::vector<Ref>& targets,
                                bool backward_inputs) {
  BackwardWalk p;
  p.targets = targets;
  for (int name : args.roots) p.roots.push_back(use_of(impl_of(name), true));
  for (size_t r = 0; r < args.roots.size(); ++r) {
    const int g = args.grad_tensors.empty() ? -1 : args.grad_tensors[r];
    p.go_impls.push_back(g < 0 ? -1 : impl_of(g));
    if (g >= 0) {
      p.gos.push_back(use_of(impl_of(g), args.create_graph));
    } else {
      Use ones;
      ones.shape = p.roots[r].shape;
      ones.snapshot.assign(count(ones.shape), 1.0);
      p.gos.push_back(ones);
    }
  }
  const int size = program_.size();
  p.reachable.assign(size, 0);
  std::vector<int> stack;
  for (const Use& r : p.roots) {
    stack.push_back(r.ref.node);
    p.reached_edges.insert(r.ref);
  }
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    if (p.reachable[n]) continue;
    p.reachable[n] = 1;
    for (const auto& [i, e] : program_.edges(n)) {
      p.reached_edges.insert(e);
      stack.push_back(e.node);
    }
  }
  p.to_leaf.assign(size, 0);
  for (const ImplState& t : impls_) {
    if (t.retains_grad && t.grad_fn.node >= 0) p.retained_edges.insert(t.grad_fn);
  }
  for (int n = 0; n < size; ++n) {  // children come before their parents
    if (!p.reachable[n]) continue;
    const Node& node = program_.node(n);
    if (node.kind == OpKind::kLeaf) {
      const ImplState& x = impls_[node.leaf_impl];
      p.to_leaf[n] = x.grad_fn.node >= 0 || x.leaf_requires_grad;
    }
    // A node with hooks wants its gradients as such a leaf does: the engine's per-call needs
    // compute them (Note [Hooks], engine/hooks.h). A tensor that retains grad (whose values the
    // model may no longer know) wants its own slot's alone, as PyTorch's ideal needs: an edge
    // into that slot is needed, its node's other slots are not for its sake.
    for (const auto& [id, h] : hooks_) {
      if (!h.removed && h.edge.node == n) p.to_leaf[n] = 1;
    }
    for (const auto& [i, e] : program_.edges(n)) {
      if (p.to_leaf[e.node] || p.retained_edges.count(e)) p.to_leaf[n] = 1;
    }
  }
  p.fed_retained.assign(size, 0);  // a reachable node with an edge into a retained slot runs
  for (int n = 0; n < size; ++n) {
    if (!p.reachable[n]) continue;
    for (const auto& [i, e] : program_.edges(n)) {
      if (p.retained_edges.count(e)) p.fed_retained[e.node] = 1;
    }
  }
  p.post_hooked.assign(size, 0);
  p.fed_by_post_hooks.assign(size, 0);
  for (const auto& [id, h] : hooks_) {
    if (!h.removed && h.kind == HookKind::kPost && p.reachable[h.edge.node]) {
      p.post_hooked[h.edge.node] = 1;
    }
  }
  for (int n = 0; n < size; ++n) {  // a post-hooked node that is reachable runs (to_leaf)
    if (!p.post_hooked[n]) continue;
    for (const auto& [i, e] : program_.edges(n)) {
      if (program_.node(e.node).kind != OpKind::kLeaf) p.fed_by_post_hooks[e.node] = 1;
    }
  }
  std::set<int> hooked_nodes;  // with pre- or post-hooks
  for (const auto& [id, h] : hooks_) {
    if (h.removed) continue;
    if (h.kind == HookKind::kTensor) p.scale[h.edge] = factor_at(h.edge);
    if (h.on_node()) hooked_nodes.insert(h.edge.node);
  }
  // Note [Model node hooks]: what a node's hooks scale, its grad_outputs before it runs or its
  // grad_inputs after, scales every path through it alike.
  for (int n : hooked_nodes) {
    const double f = node_factor(n, HookKind::kPre) * node_factor(n, HookKind::kPost);
    for (int s = 0; s < static_cast<int>(program_.node(n).out_shapes.size()); ++s) {
      p.scale[{n, s}] = factor_at({n, s}) * f;
    }
  }
  p.needed.assign(size, 0);
  p.own_only.assign(size, 0);
  const bool per_edge = sem_.runs_only_paths_to_requested_edges;
  auto propagate = [&] {
    for (int n = 0; n < size; ++n) {  // children come before their parents
      if (!p.reachable[n]) continue;
      for (const auto& [i, e] : program_.edges(n)) {
        const bool requested = per_edge ? p.is_target(e) : p.is_target_node(e.node);
        if (requested || p.needed[e.node]) p.needed[n] = 1;
      }
    }
  };
  propagate();
  if (backward_inputs && !sem_.backward_skips_its_inputs_own_nodes) {
    for (const Ref& t : targets) {  // PyTorch issue 92331: a non-leaf input's own node runs
      const int n = t.node;
      if (!p.reachable[n] || p.needed[n] || program_.node(n).kind == OpKind::kLeaf) continue;
      p.needed[n] = 1;
      p.own_only[n] = 1;
    }
    propagate();
  }
  return p;
}

Outcome Model::execute_checks(const BackwardWalk& p, const std::set<int>& written) {
  Outcome out;
  for (int n = 0; n < p.planned(); ++n) {
    if (!p.runs(n)) continue;
    const Node& node = program_.node(n);
    auto edge_needed = [&](const Ref& e) { return p.computes(n, e); };
    if (node.kind == OpKind::kGrad) {
      // Its backward graph saved values the model does not itemize (Note [Uncertain state]).
      bool written = false;
      for (const auto& [s, v] : program_.watch(n)) {
        written = written || storages_[s].version != v || storages_[s].unknown;
      }
      if (written || program_.released(n) != Released::kNo) {
        raise_or_maybe(out, false, "a create_graph gradient's graph was written to or freed");
      }
      continue;
    }
    if (node.kind == OpKind::kInplaceOnView && !sem_.copy_slices_runs_after_release &&
        program_.released(n) != Released::kNo) {
      raise_or_maybe(out, program_.released(n) == Released::kYes,
                     "Trying to backward through the graph a second time (CopySlices, the "
                     "history of a base written through a view, was freed)");
    }
    const bool sure = !(p.own_only[n] && may_end_in_a_view(node));
    for (const SavedSlot& s : node.saved) {
      if (!unpacks(sem_, node, s, edge_needed)) continue;
      if (program_.released(n) != Released::kNo) {
        raise_or_maybe(out, sure && program_.released(n) == Released::kYes,
                       std::string("Trying to backward through the graph a second time (") +
                           op_name(node.kind) + "'s saved values were freed)");
      }
      if (s.storage >= 0 && storages_[s.storage].unknown) {
        raise_or_maybe(out, false,
                       std::string("a value saved by ") + op_name(node.kind) +
                           " may have been written by a backward that failed");
      } else if (s.storage >= 0 && s.packed_by < 0 && storages_[s.storage].version != s.version) {
        raise_or_maybe(out, sure && s.certain,
                       std::string("a value saved by ") + op_name(node.kind) +
                           " has been modified by an inplace operation");
      }
      if (written.count(s.storage)) {  // the call's own accumulation may write it first
        raise_or_maybe(out, false,
                       std::string("a value saved by ") + op_name(node.kind) +
                           " is a .grad this backward adds into in place");
      }
    }
  }
  // AccumulateGrad checks the leaf as it is now.
  for (const Ref& t : p.targets) {
    const Node& node = program_.node(t.node);
    if (node.kind == OpKind::kLeaf && p.reached_edges.count(t) &&
        impls_[node.leaf_impl].grad_fn.node >= 0) {
      raise_or_maybe(out, true, "leaf variable has been moved into the graph interior");
    }
  }
  return out;
}

void Model::release(const BackwardWalk& p, const CallArgs& args, bool certain) {
  const bool retain = args.retain_graph < 0 ? args.create_graph : args.retain_graph == 1;
  if (retain) return;
  for (int n = 0; n < p.planned(); ++n) {
    const bool ran = p.all ? p.reachable[n] : p.needed[n];
    if (!ran) continue;
    const Node& node = program_.node(n);
    const bool sure =
        certain && node.kind != OpKind::kGrad && !(p.own_only[n] && may_end_in_a_view(node));
    if (sure) {
      program_.set_released(n, Released::kYes);
    } else if (program_.released(n) == Released::kNo) {
      program_.set_released(n, Released::kMaybe);
    }
    if (node.kind == OpKind::kGrad) release_call_siblings(n);
  }
}

// The gradients recorded by the call that recorded kGrad node n share parts of its backward
// graph (GradDef::call), which releasing it may have freed.
void Model::release_call_siblings(int n) {
  const int call = program_.node(n).grad.call;
  for (int m = 0; m < program_.size(); ++m) {
    const Node& other = program_.node(m);
    if (m != n && other.kind == OpKind::kGrad && other.grad.call == call &&
        program_.released(m) == Released::kNo) {
      program_.set_released(m, Released::kMaybe);
    }
  }
}

namespace {

// The custom Function nodes a call runs and the needs_input_grad each must see.
template <typename RunsFn, typename Computes>
std::map<int, std::vector<bool>> custom_needs(const ApiProgram& program, RunsFn runs,
                                              Computes computes) {
  std::map<int, std::vector<bool>> out;
  for (int n = 0; n < program.size(); ++n) {
    const Node& node = program.node(n);
    if (!runs(n) || (node.kind != OpKind::kCustomMul && node.kind != OpKind::kCustomTwo)) {
      continue;
    }
    std::vector<bool> needs;
    for (const Use& in : node.inputs) needs.push_back(in.tracked && computes(n, in.ref));
    out[n] = needs;
  }
  return out;
}

}  // namespace

// The history a create_graph gradient for target t hangs on: the incoming gradients that require
// grad and, for every formula on a path from the roots to t, the saved values it reads that
// require grad (a constant formula cuts everything above it). Also the storages its graph may
// have saved, for Note [Uncertain state].
Ref Model::grad_history(const BackwardWalk& p, const Ref& t, Watch* watch,
                        bool* through_other_target, double target_scale) {
  const int size = program_.size();
  std::vector<char> need(size, 0);
  for (int n = 0; n < p.planned(); ++n) {
    if (!p.reachable[n]) continue;
    for (const auto& [i, e] : program_.edges(n)) {
      if (e == t || need[e.node]) need[n] = 1;
    }
  }
  auto edge_needed = [&](const Ref& e) { return e == t || need[e.node]; };
  // Another requested tensor on the way to t: t's gradient is computed from that one's (the
  // same tensor grad() returns for it), a link the sets below do not record.
  *through_other_target = false;
  for (const Ref& other : p.targets) {
    if (!(other == t) && need[other.node]) *through_other_target = true;
  }
  std::vector<std::set<Ref>> in(size);
  std::set<Ref> deps;
  for (size_t r = 0; r < p.roots.size(); ++r) {
    std::set<Ref>& into = p.roots[r].ref == t ? deps : in[p.roots[r].ref.node];
    if (p.gos[r].tracked) into.insert(p.gos[r].ref);
    if (p.go_impls[r] >= 0)
      watch->emplace_back(impls_[p.go_impls[r]].storage, version_of(p.go_impls[r]));
  }
  for (int n = size - 1; n >= 0; --n) {
    if (!need[n]) continue;
    const Node& node = program_.node(n);
    const OpRules rules = op_rules(node.kind, node.attrs);
    for (const auto& [i, e] : program_.edges(n)) {
      if (!edge_needed(e)) continue;
      std::set<Ref>& into = e == t ? deps : in[e.node];
      if (bit(rules.constant_formulas, i)) continue;
      into.insert(in[n].begin(), in[n].end());
      for (const SavedSlot& s : node.saved) {
        const bool used = bit(s.used_by, i);
        // A leaf saved as itself counts with the requires_grad it has now; a view of it that
        // matmul/linear saved has the history it was made with, in PyTorch too.
        if (used && s.leaf_impl >= 0 && !s.via_view) {
          if (is_leaf(s.leaf_impl) && requires_grad(s.leaf_impl)) into.insert(edge(s.leaf_impl));
        } else if (used && s.producer.node >= 0) {
          into.insert(s.producer);
        }
        if ((used || node.unpack_all) && s.storage >= 0) watch->emplace_back(s.storage, s.version);
      }
    }
  }
  if (deps.empty()) return {};
  Node g;
  g.kind = OpKind::kGrad;
  g.grad = p.def(t, target_scale);
  g.grad_edges.assign(deps.begin(), deps.end());
  return add_node(std::move(g));
}

void Model::accumulate(int x, const std::vector<double>& g, Ref history, bool create_graph,
                       const ApiProgram::GradTangent& tangent) {
  const int old = impls_[x].grad;
  const Dims shape = impls_[x].shape;
  auto fresh = [&](const std::vector<double>& values, Ref fn) {
    const int i = new_impl(shape, new_storage(values));
    storages_[impls_[i].storage].version_from_zero = false;
    impls_[i].grad_fn = fn;
    impls_[x].grad = i;
    return i;
  };
  const bool leaf = impls_[x].grad_fn.node < 0;
  if (old < 0) {  // PyTorch steals or clones the incoming gradient: never shared
    const int i = fresh(g, history);
    // A leaf's .grad without create_graph: the gradient itself detached (no tangent) where
    // PyTorch steals it, else a clone (with it), which the model does not follow.
    const bool stolen_or_cloned = leaf && !create_graph && tangent.defined;
    set_tangent(i, stolen_or_cloned ? ApiProgram::GradTangent{} : tangent);
    // A leaf's first .grad follows the layout contract: the leaf's strides where it is dense.
    const Strided leaf = layout(x);
    if (impls_[x].grad_fn.node < 0 && impls_[x].layout_known && non_overlapping_and_dense(leaf)) {
      impls_[i].strides = leaf.strides;
      write(i, g);
    } else {
      impls_[i].layout_known = impls_[x].grad_fn.node < 0 && impls_[x].layout_known;
    }
    return;
  }
  // A leaf's .grad is updated in place unless grad mode is on (create_graph); a non-leaf's
  // (backward(inputs=...) retains it) is always replaced.
  if (leaf && !create_graph) {
    std::vector<double> sum = values_of(old);
    for (size_t k = 0; k < g.size(); ++k) sum[k] += g[k];
    write(old, sum);  // through its layout: `x.grad = t` may have made it a view
    ++storages_[impls_[old].storage].version;
    sum_tangent(old, old, tangent);
    return;
  }
  Node sum;
  sum.kind = OpKind::kAdd;
  sum.inputs.push_back(use_of(old, create_graph));
  Use incoming;
  incoming.shape = shape;
  incoming.snapshot = g;
  incoming.tracked = history.node >= 0;
  incoming.ref = history;
  sum.inputs.push_back(incoming);
  std::vector<double> total = ApiProgram::forward(OpKind::kAdd, {}, sum.inputs)[0].v;
  const bool tracked = sum.inputs[0].tracked || sum.inputs[1].tracked;
  const int i = fresh(total, tracked ? add_node(std::move(sum)) : Ref{});
  impls_[i].layout_known = false;
  sum_tangent(i, old, tangent);
}

void Model::retain(int i) {
  refresh_view(i);  // retain_grad() reads grad_fn, which brings a stale view up to date
  if (impls_[i].grad_fn.node >= 0) impls_[i].retains_grad = true;  // a leaf: nothing to do
}

Model::Flow Model::flow_into(const BackwardWalk& p, const Ref& e) const {
  if (!p.reached_edges.count(e)) return Flow::kNone;
  const Flow roots = p.is_root(e) ? Flow::kRoots : Flow::kNone;
  if (p.all) return Flow::kAll;
  if (p.needed[e.node] || p.is_target(e)) return Flow::kAll;
  if (p.is_target_node(e.node)) {
    // A node that only captures: PyTorch's consumers send gradients to all of its slots (they
    // all run); the engine's root gradients reach it (Note [Hooks], engine/hooks.h).
    return sem_.runs_only_paths_to_requested_edges ? roots : Flow::kAll;
  }
  return !sem_.single_root_skips_unneeded_node && p.roots.size() == 1 ? roots : Flow::kNone;
}

std::vector<Model::RetainedWrite> Model::retained_writes(const BackwardWalk& p) const {
  std::vector<RetainedWrite> out;
  for (int i = 0; i < num_impls(); ++i) {
    const ImplState& t = impls_[i];
    if (!t.retains_grad || t.dead) continue;
    const Flow flow = flow_into(p, t.grad_fn);
    if (flow != Flow::kNone) out.push_back({i, flow});
  }
  return out;
}

namespace {

// The walk of a call whose only gradient at `e` is what its roots send there: no node sends any.
template <typename Walk>
Walk roots_at(const Walk& p, const Ref& e) {
  Walk q = p;
  q.roots.clear();
  q.gos.clear();
  q.go_impls.clear();
  for (size_t r = 0; r < p.roots.size(); ++r) {
    if (!(p.roots[r].ref == e)) continue;
    q.roots.push_back(p.roots[r]);
    q.gos.push_back(p.gos[r]);
    q.go_impls.push_back(p.go_impls[r]);
  }
  std::fill(q.reachable.begin(), q.reachable.end(), 0);
  return q;
}

}  // namespace

void Model::write_retained(const BackwardWalk& p, const RetainedWrite& w, bool create_graph,
                           Outcome& out, Watch* watch, std::vector<int>* grad_nodes) {
  out.events.insert(impls_[w.impl].grad < 0 ? "retained .grad: written"
                                            : "retained .grad: added to");
  if (w.flow == Flow::kRoots) out.events.insert("retained .grad: root gradients only");
  const BackwardWalk only_roots =
      w.flow == Flow::kRoots ? roots_at(p, impls_[w.impl].grad_fn) : BackwardWalk();
  const BackwardWalk& q = w.flow == Flow::kRoots ? only_roots : p;
  const Ref e = impls_[w.impl].grad_fn;
  Ref history;
  bool nested = false;  // as a leaf's .grad: a copy, whose link to another target does not matter
  if (create_graph) history = grad_history(q, e, watch, &nested, factor_at(e));
  const std::vector<double> g =
      history.node >= 0 ? program_.value(history) : program_.vjp(q.def(e, factor_at(e)));
  if (history.node >= 0) {
    grad_nodes->push_back(history.node);
    out.events.insert("retained .grad: with history");
  }
  accumulate(w.impl, g, history, create_graph, grad_tangent(q.def(e, factor_at(e))));
  const int now = impls_[w.impl].grad;
  watch->emplace_back(impls_[now].storage, version_of(now));
}

double Model::factor_at(const Ref& e, int before) const {
  double f = 1.0;
  for (const auto& [id, h] : hooks_) {
    if (id < before && !h.removed && h.kind == HookKind::kTensor && h.edge == e) f *= h.factor;
  }
  return f;
}

double Model::node_factor(int n, HookKind kind, int before) const {
  double f = 1.0;
  for (const auto& [id, h] : hooks_) {
    if (id < before && !h.removed && h.kind == kind && h.edge.node == n) f *= h.factor;
  }
  return f;
}

// Note [Model hooks]: a hook fires where a retained .grad at its edge would be written.
void Model::fire_hooks(const BackwardWalk& p, Outcome& out) const {
  for (const auto& [id, h] : hooks_) {
    if (h.removed || h.kind != HookKind::kTensor) continue;
    const Flow flow = flow_into(p, h.edge);
    if (flow == Flow::kNone) {
      // Its node runs its hooks (some slot of it gets a gradient): None for this slot.
      const int slots = static_cast<int>(program_.node(h.edge.node).out_shapes.size());
      for (int s = 0; s < slots; ++s) {
        if (flow_into(p, {h.edge.node, s}) != Flow::kNone) {
          out.hooks[id] = {{HookValue{}}};
          out.events.insert("hook: handed None");
          break;
        }
      }
      continue;
    }
    const BackwardWalk q = flow == Flow::kRoots ? roots_at(p, h.edge) : p;
    out.hooks[id] = {{{true, program_.vjp(q.def(h.edge, factor_at(h.edge, id)))}}};
    out.events.insert(h.factor == 1.0 ? "hook: fired (keeps)" : "hook: fired (scales)");
  }
}

// Note [Model node hooks]: a node's pre- and post-hooks run iff the node runs.
void Model::fire_node_hooks(const BackwardWalk& p, Outcome& out) const {
  // Whether node n's backward computes the gradient along edge e (PyTorch: per node, or every
  // edge for backward() without inputs; the engine: per edge, Note [Retained gradients], but
  // every one of a node with a post-hook in backward() without inputs: BackwardWalk::computes).
  auto computes = [&](int n, const Ref& e) {
    if (p.all || sem_.runs_only_paths_to_requested_edges) return p.computes(n, e);
    return p.needed[e.node] || p.is_target_node(e.node);
  };
  for (const auto& [id, h] : hooks_) {
    if (h.removed || !h.on_node() || !p.runs(h.edge.node)) continue;
    const int n = h.edge.node;
    const Node& node = program_.node(n);
    // grad_outputs: what reached each slot, after its tensor hooks and the earlier pre-hooks.
    const double pre = node_factor(n, HookKind::kPre, h.kind == HookKind::kPre ? id : 1 << 30);
    std::vector<HookValue> gos;
    std::vector<std::vector<double>> incoming;
    for (int s = 0; s < static_cast<int>(node.out_shapes.size()); ++s) {
      const Ref e{n, s};
      const Flow flow = flow_into(p, e);
      HookValue v;
      if (flow != Flow::kNone) {
        const BackwardWalk q = flow == Flow::kRoots ? roots_at(p, e) : p;
        v = {true, program_.vjp(q.def(e, factor_at(e)))};
        for (double& x : v.grad) x *= pre;
      }
      incoming.push_back(v.defined ? v.grad : std::vector<double>());
      gos.push_back(std::move(v));
    }
    if (h.kind == HookKind::kPre) {
      out.hooks[id] = {gos};
      out.events.insert("node pre-hook: fired");
      continue;
    }
    // grad_inputs: what the node's backward returns per input, after the earlier post-hooks.
    // PyTorch's custom Functions (the replay's, as the engine's) compute what needs_input_grad
    // asks for.
    const bool function = node.kind == OpKind::kCustomMul || node.kind == OpKind::kCustomTwo ||
                          node.kind == OpKind::kMulScalar;  // the replay's mul_scalar
    const double post = node_factor(n, HookKind::kPost, id);
    const std::vector<std::vector<double>> gis = program_.input_vjp(n, incoming);
    HookFire fire;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Use& in = node.inputs[i];
      const bool defined = function && !sem_.custom_functions_see_per_call_needs
                               ? in.tracked
                               : in.tracked && computes(n, in.ref);
      HookValue v;
      if (defined) {
        v = {true, gis[i]};
        for (double& x : v.grad) x *= post;
      }
      fire.values.push_back(std::move(v));
    }
    if (node.kind == OpKind::kAddScalar && !sem_.scalar_add_has_one_input) {
      fire.values.emplace_back();  // the number's
    }
    fire.values.insert(fire.values.end(), gos.begin(), gos.end());
    out.hooks[id] = std::move(fire);
    out.events.insert("node post-hook: fired");
  }
}

// After the leaves' accumulation: a leaf's AccumulateGrad runs in backward() (never in grad())
// where the leaf is reached and wanted, also when it no longer requires grad (then nothing was
// accumulated); its hooks are handed the leaf, whose .grad they log.
void Model::fire_post_accumulate_hooks(const BackwardWalk& p, Outcome& out) const {
  for (const auto& [id, h] : hooks_) {
    if (h.removed || h.kind != HookKind::kPostAccumulate) continue;
    const bool runs =
        p.all ? p.runs(h.edge.node) : p.is_target(h.edge) && p.reached_edges.count(h.edge) > 0;
    if (!runs) continue;
    const int g = impls_[h.impl].grad;
    if (g >= 0 && impls_[g].dead) {
      out.hooks_known = false;
      continue;
    }
    out.hooks[id] = {{g < 0 ? HookValue{} : HookValue{true, values_of(g)}}};
    out.events.insert("post-accumulate-grad hook: fired");
  }
}

void Model::forget_retained(Outcome& out, const std::vector<RetainedWrite>& writes) {
  for (const RetainedWrite& w : writes) {
    impls_[w.impl].grad = -1;  // replaced, never written in place: nothing else is unknown
    if (std::find(out.dropped.begin(), out.dropped.end(), w.impl) == out.dropped.end()) {
      out.dropped.push_back(w.impl);
    }
  }
}

// Note [Uncertain state]: `targets` are the impls the call may have accumulated into.
void Model::forget_grads(Outcome& out, const CallArgs& args, const std::vector<int>& targets) {
  for (int x : targets) {
    const int g = impls_[x].grad;
    const bool leaf = impls_[x].grad_fn.node < 0;  // a non-leaf's .grad is replaced instead
    if (g >= 0 && leaf && !args.create_graph) kill_storage(impls_[g].storage);  // maybe added into
    impls_[x].grad = -1;
    out.dropped.push_back(x);
  }
}

Outcome Model::backward(const CallArgs& args) {
  Outcome out = validate("backward", args);
  if (out.expect == Expect::kRaise) return out;
  std::vector<int> target_impls;
  for (int name : args.inputs) {  // each tensor once, however often it is named
    const int i = impl_of(name);
    if (std::find(target_impls.begin(), target_impls.end(), i) == target_impls.end()) {
      target_impls.push_back(i);
    }
  }
  std::vector<Ref> targets;
  for (int i : target_impls) targets.push_back(edge(i));
  BackwardWalk p = plan(args, targets, true);
  if (args.inputs.empty()) {  // every leaf the roots reach
    p.all = true;
    p.all_only_to_leaves = sem_.backward_computes_only_gradients_for_leaves_that_want_them;
    for (int n = 0; n < program_.size(); ++n) {
      if (p.reachable[n] && program_.node(n).kind == OpKind::kLeaf) {
        p.targets.push_back({n, 0});
        target_impls.push_back(program_.node(n).leaf_impl);
      }
    }
  }
  // The .grads this call adds into in place: their storages change while the pass runs.
  std::set<int> written;
  for (size_t k = 0; k < p.targets.size(); ++k) {
    const ImplState& x = impls_[target_impls[k]];
    if (!args.create_graph && p.reached_edges.count(p.targets[k]) && x.grad_fn.node < 0 &&
        x.leaf_requires_grad && x.grad >= 0) {
      written.insert(impls_[x.grad].storage);
    }
  }
  const std::vector<RetainedWrite> retained = retained_writes(p);
  out = execute_checks(p, written);
  // Under create_graph a leaf's .grad is summed out of place in grad mode, which reads its
  // grad_fn: a .grad whose grad_fn cannot be read raises (Note [Model view kinds]).
  for (size_t k = 0; k < p.targets.size() && out.expect == Expect::kOk; ++k) {
    const ImplState& x = impls_[target_impls[k]];
    if (args.create_graph && p.reached_edges.count(p.targets[k]) && x.grad_fn.node < 0 &&
        x.leaf_requires_grad && x.grad >= 0 && unreadable(x.grad)) {
      out = Outcome::raise("backward: create_graph sums into a .grad whose grad_fn cannot be read");
    }
  }
  if (out.expect != Expect::kOk) {
    forget_grads(out, args, target_impls);
    forget_retained(out, retained);
    release(p, args, false);
    return out;
  }
  // An incoming gradient that is one of those .grads: what is added depends on the order.
  bool order_dependent = false;
  for (int g : p.go_impls)
    order_dependent = order_dependent || (g >= 0 && written.count(impls_[g].storage));
  out.needs = custom_needs(
      program_, [&](int n) { return p.runs(n); },
      [&](int n, const Ref& e) { return p.computes(n, e); });
  fire_hooks(p, out);
  fire_node_hooks(p, out);
  out.hooks_known = !order_dependent;
  Watch watch;
  std::vector<int> grad_nodes;
  for (size_t k = 0; k < p.targets.size(); ++k) {
    const Ref t = p.targets[k];
    const int x = target_impls[k];
    if (impls_[x].grad_fn.node >= 0) continue;    // a non-leaf input retains grad: below
    if (!p.reached_edges.count(t)) continue;      // nothing flows there: .grad stays as it is
    if (!impls_[x].leaf_requires_grad) continue;  // turned off
    Ref history;
    bool nested = false;  // a .grad's history is a copy's: the link does not matter there
    if (args.create_graph) history = grad_history(p, t, &watch, &nested, factor_at(t));
    const std::vector<double> g =
        history.node >= 0 ? program_.value(history) : program_.vjp(p.def(t, factor_at(t)));
    if (history.node >= 0) grad_nodes.push_back(history.node);
    accumulate(x, g, history, args.create_graph, grad_tangent(p.def(t, factor_at(t))));
    const int now = impls_[x].grad;
    watch.emplace_back(impls_[now].storage, version_of(now));
  }
  fire_post_accumulate_hooks(p, out);
  write_all_retained(p, retained, written, args.create_graph, out, &watch, &grad_nodes);
  for (int n : grad_nodes) program_.set_watch(n, watch);
  release(p, args, true);
  if (order_dependent) {
    forget_grads(out, args, target_impls);
    forget_retained(out, retained);
  }
  return out;
}

// Retained gradients are written after the leaves' in place accumulation, from the values the
// .grads had before the call. One that adds to a .grad written in place this call is dropped
// (the order of the two decides what it reads), and so is one that adds to a value the model no
// longer knows (Note [Uncertain state]).
void Model::write_all_retained(const BackwardWalk& p, const std::vector<RetainedWrite>& retained,
                               const std::set<int>& written, bool create_graph, Outcome& out,
                               Watch* watch, std::vector<int>* grad_nodes) {
  std::vector<RetainedWrite> unknown;
  for (const RetainedWrite& w : retained) {
    const int old = impls_[w.impl].grad;
    if (old >= 0 && (written.count(impls_[old].storage) || impls_[old].dead)) {
      unknown.push_back(w);
    } else {
      write_retained(p, w, create_graph, out, watch, grad_nodes);
    }
  }
  forget_retained(out, unknown);
}

Outcome Model::grad(const CallArgs& args, const std::vector<int>& result_names) {
  for (int name : result_names) reserve(name);
  Outcome out = validate("grad", args);
  if (out.expect == Expect::kRaise) return out;
  std::vector<Ref> targets;
  for (int name : args.inputs) targets.push_back(edge(impl_of(name)));
  BackwardWalk p = plan(args, targets, false);
  for (const Ref& t : targets) {
    const bool reached =
        sem_.reached_node_gives_zeros ? p.reachable[t.node] != 0 : p.reached_edges.count(t) > 0;
    if (!reached && !args.allow_unused) {
      // The engine finds this before running anything (PyTorch runs the graph first).
      return Outcome::raise("grad: one of the differentiated tensors was not used in the graph");
    }
  }
  const std::vector<RetainedWrite> retained = retained_writes(p);
  out = execute_checks(p, {});
  if (out.expect != Expect::kOk) {
    forget_retained(out, retained);
    release(p, args, false);
    return out;
  }
  out.needs = custom_needs(
      program_, [&](int n) { return p.needed[n] != 0; },
      [&](int n, const Ref& e) { return p.computes(n, e); });
  fire_hooks(p, out);
  fire_node_hooks(p, out);
  Watch watch;
  std::vector<int> grad_nodes;
  std::map<Ref, int> returned;  // a tensor named twice gets the same gradient object twice
  std::set<Ref> retained_edges;
  for (const RetainedWrite& w : retained) retained_edges.insert(impls_[w.impl].grad_fn);
  for (size_t k = 0; k < targets.size(); ++k) {
    ExpectedGrad e;
    // Not reached: undefined (allow_unused). The engine's "reached" is per node: an output of
    // a node the roots reach whose own edge gets nothing (a multi-output node's other output)
    // gets zeros; PyTorch treats it as not reached (README.md).
    const bool reached = p.reached_edges.count(targets[k]) > 0;
    if (!reached && (args.allow_unused || !p.reachable[targets[k].node])) {
      out.grads.push_back(e);
      continue;
    }
    if (returned.count(targets[k])) {
      const int i = returned[targets[k]];
      bind(result_names[k], i);
      out.grads.push_back(
          out.grads[std::find(targets.begin(), targets.end(), targets[k]) - targets.begin()]);
      continue;
    }
    Ref history;
    bool nested = false;
    // Captured before its hooks where its node runs, after them where it only captures.
    const double own = p.needed[targets[k].node] ? 1.0 : factor_at(targets[k]);
    if (args.create_graph) history = grad_history(p, targets[k], &watch, &nested, own);
    e.defined = true;
    e.value = history.node >= 0 ? program_.value(history) : program_.vjp(p.def(targets[k], own));
    e.requires_grad = history.node >= 0;
    const int i = new_impl(program_.shape(targets[k]), new_storage(e.value));
    storages_[impls_[i].storage].version_from_zero = false;
    impls_[i].layout_known = false;  // the formulas' strides
    impls_[i].grad_fn = history;
    // The engine's zeros for an output its node's gradient does not reach: not PyTorch's.
    if (reached) {
      if (const char* event = set_grad_tangent(i, p.def(targets[k], own))) out.events.insert(event);
    }
    if (history.node >= 0) grad_nodes.push_back(history.node);
    watch.emplace_back(impls_[i].storage, 0u);
    // Its history goes through another result's, which the model does not record: checked now
    // (Grad::verify), never used again. So when it is also the gradient a retaining tensor's
    // .grad copies: that copy's history goes through this very tensor.
    impls_[i].dead = (nested || retained_edges.count(targets[k])) && history.node >= 0;
    bind(result_names[k], i);
    returned[targets[k]] = i;
    out.grads.push_back(e);
  }
  write_all_retained(p, retained, {}, args.create_graph, out, &watch, &grad_nodes);
  for (int n : grad_nodes) program_.set_watch(n, watch);
  release(p, args, true);
  return out;
}

void Model::end_call() {
  for (int i = 0; i < num_impls(); ++i) {
    if (impls_[i].retains_grad && !impls_[i].dead) refresh_view(i);
  }
}

}  // namespace ag::proptests
