// Hooks on random DAGs (Note [Hooks], engine/hooks.h), checked under every combination of the
// engine options: which hooks run, against the graph walk (graph_walk.h); that hooks which give
// back what they are handed change nothing; and that a hook scaling one value's gradient scales
// exactly the gradients through that value, against finite differences of a forward in which
// that value is scaled about its current value (an independent oracle: no reverse mode).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "engine/autograd.h"
#include "engine/hooks.h"
#include "engine/saved_tensor_hooks.h"
#include "ops/ops.h"
#include "proptests/fuzz_stats.h"
#include "proptests/graph_gen.h"
#include "proptests/graph_walk.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

EdgeList edges_of(const TensorList& ts) {
  EdgeList out;
  for (const Tensor& t : ts) out.push_back(gradient_edge(t));
  return out;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  return !a.defined() || (a.shape() == b.shape() && a.to_vector() == b.to_vector());
}

// The three calls whose hooks are checked.
enum class CallKind { kGrad, kBackward, kBackwardInputs };
const char* call_name(CallKind k) {
  return k == CallKind::kGrad ? "grad" : k == CallKind::kBackward ? "backward" : "backward(inputs)";
}

// The node a hook on value i goes on (its grad_fn, or a leaf's AccumulateGrad); null for a value
// that does not require grad.
const Node* site(const Tensor& t) { return gradient_edge(t).function.get(); }

// A built graph with a logging hook of every kind on every value and node: each event names the
// value (a node by the first value it made) so that logs of two builds of one spec compare.
struct HookedGraph {
  BuiltGraph g;
  std::map<const Node*, size_t> first_value;  // each hooked node, by the first value it made
  std::vector<std::string> log;
  std::vector<ScopedHook> post_accumulate;  // they keep their leaves alive: removed at the end

  explicit HookedGraph(const GraphSpec& spec) : g(build_graph(spec)) {
    for (size_t i = 0; i < g.values.size(); ++i) {
      const Tensor& v = g.values[i];
      const Node* node = site(v);
      if (node == nullptr) continue;
      v.register_hook([this, i](const Tensor& grad) {
        log.push_back("t" + std::to_string(i) + (grad.defined() ? "" : " undefined"));
        return Tensor();
      });
      if (!first_value.emplace(node, i).second) continue;
      Node& n = const_cast<Node&>(*node);
      n.register_prehook([this, i](const TensorList&) {
        log.push_back("pre" + std::to_string(i));
        return TensorList();
      });
      n.register_hook([this, i](const TensorList&, const TensorList&) {
        log.push_back("post" + std::to_string(i));
        return TensorList();
      });
      if (v.is_leaf()) {
        post_accumulate.emplace_back(v.register_post_accumulate_grad_hook(
            [this, i](const Tensor&) { log.push_back("pacc" + std::to_string(i)); }));
      }
    }
  }

  void call(CallKind kind, const EngineOptions& options) {
    switch (kind) {
      case CallKind::kGrad:
        grad(g.outputs, g.requested,
             GradArgs()
                 .grad_outputs(output_grads(g.outputs))
                 .retain_graph()
                 .allow_unused()
                 .engine_options(options));
        break;
      case CallKind::kBackward:
        backward(g.outputs, BackwardArgs()
                                .grad_tensors(output_grads(g.outputs))
                                .retain_graph()
                                .engine_options(options));
        break;
      case CallKind::kBackwardInputs:
        backward(g.outputs, BackwardArgs()
                                .grad_tensors(output_grads(g.outputs))
                                .inputs(g.requested)
                                .retain_graph()
                                .engine_options(options));
        break;
    }
  }
};

// The events an independent walk of the graph says `kind` must log, as a multiset (each once):
// node hooks on every node the call runs, tensor hooks on every value whose node runs or holds a
// captured gradient, post-accumulate hooks on every leaf whose AccumulateGrad runs.
std::multiset<std::string> expected_events(const HookedGraph& h, CallKind kind) {
  const EdgeList roots = edges_of(h.g.outputs), targets = edges_of(h.g.requested);
  std::set<const Node*> runs, captures;
  if (kind == CallKind::kBackward) {
    for (const Node* n : reachable_nodes(roots)) runs.insert(n);  // every leaf requires grad
  } else {
    const std::set<uint64_t> on_paths = nodes_on_paths_to(roots, targets);
    const std::vector<const Node*> reachable = reachable_nodes(roots);
    const std::set<const Node*> reached(reachable.begin(), reachable.end());
    for (const Node* n : reachable) {
      if (on_paths.count(n->sequence_nr())) runs.insert(n);
    }
    // A node that only captures is handed its gradients, and so runs its tensors' hooks, only
    // if a root's gradient goes to it or a running node sends one into a captured slot: the
    // engine runs no node for a sibling output's slot alone (DEVIATIONS.md, extra-executions).
    std::set<const Node*> fed;
    for (const Edge& r : roots) fed.insert(r.function.get());
    std::set<std::pair<const Node*, uint32_t>> target_slots;
    for (const Edge& t : targets) target_slots.emplace(t.function.get(), t.input_nr);
    for (const Node* n : reachable) {
      for (const Edge& e : n->next_edges()) {
        if (e.is_valid() && target_slots.count({e.function.get(), e.input_nr})) {
          fed.insert(e.function.get());
        }
      }
    }
    for (const Edge& t : targets) {
      if (!reached.count(t.function.get()) || !fed.count(t.function.get())) continue;
      // backward(inputs=...) runs a leaf's AccumulateGrad; grad() and a non-leaf capture.
      const bool leaf_runs =
          kind == CallKind::kBackwardInputs && t.function->accumulates_into_leaf();
      (leaf_runs ? runs : captures).insert(t.function.get());
    }
  }
  std::multiset<std::string> events;
  for (size_t i = 0; i < h.g.values.size(); ++i) {
    const Node* node = site(h.g.values[i]);
    if (node == nullptr) continue;
    if (runs.count(node) || captures.count(node)) events.insert("t" + std::to_string(i));
    if (h.first_value.at(node) != i || !runs.count(node)) continue;
    events.insert("pre" + std::to_string(i));
    events.insert("post" + std::to_string(i));
    if (h.g.values[i].is_leaf()) events.insert("pacc" + std::to_string(i));
  }
  return events;
}

std::string strip_undefined(const std::string& e) { return e.substr(0, e.find(' ')); }

// Hooks run exactly on the nodes the call runs (and a captured value's tensor hooks where its
// node only captures), each once, a node's tensor hooks before its pre-hooks before its
// post-hooks, and in the same order under every option combination.
AG_PROPERTY(HookProperties, HooksRunExactlyWhereNodesRunUnderEveryOption) {
  const GraphSpec spec = *rc::gen::arbitrary<GraphSpec>();
  const CallKind kind =
      *rc::gen::element(CallKind::kGrad, CallKind::kBackward, CallKind::kBackwardInputs);
  fuzz_stats().record("hooks call", call_name(kind));
  RC_TAG(call_name(kind));
  std::vector<std::string> first;
  for (const EngineOptions& options : all_option_combinations()) {
    HookedGraph h(spec);
    h.call(kind, options);
    std::multiset<std::string> got;
    for (const std::string& e : h.log) got.insert(strip_undefined(e));
    RC_LOG() << call_name(kind) << " under " << to_string(options) << "\n";
    RC_ASSERT(got == expected_events(h, kind));
    // Per node: tensor hooks, then the pre-hook, then the post-hook.
    std::map<std::string, size_t> at;
    for (size_t k = 0; k < h.log.size(); ++k) at[strip_undefined(h.log[k])] = k;
    for (size_t i = 0; i < h.g.values.size(); ++i) {
      const Node* node = site(h.g.values[i]);
      if (node == nullptr || !at.count("pre" + std::to_string(h.first_value.at(node)))) continue;
      const size_t pre = at.at("pre" + std::to_string(h.first_value.at(node)));
      RC_ASSERT(at.at("t" + std::to_string(i)) < pre);
      RC_ASSERT(pre < at.at("post" + std::to_string(h.first_value.at(node))));
    }
    if (first.empty()) first = h.log;
    RC_ASSERT(h.log == first);
  }
  RC_CLASSIFY(std::any_of(first.begin(), first.end(),
                          [](const std::string& e) { return e.find("undefined") != e.npos; }),
              "a hook saw no gradient");
}

// Hooks that give back what they are handed (a tensor hook its gradient, a node hook its list)
// or nothing change no gradient, bitwise.
AG_PROPERTY(HookProperties, IdentityHooksChangeNothing) {
  const GraphSpec spec = *rc::gen::arbitrary<GraphSpec>();
  const bool give_back = *rc::gen::arbitrary<bool>();
  for (const EngineOptions& options : all_option_combinations()) {
    auto call = [&](const BuiltGraph& g) {
      return grad(g.outputs, g.requested,
                  GradArgs()
                      .grad_outputs(output_grads(g.outputs))
                      .retain_graph()
                      .allow_unused()
                      .engine_options(options));
    };
    const TensorList plain = call(build_graph(spec));
    const BuiltGraph g = build_graph(spec);
    std::set<const Node*> hooked;
    for (const Tensor& v : g.values) {
      const Node* node = site(v);
      if (node == nullptr) continue;
      v.register_hook([give_back](const Tensor& grad) { return give_back ? grad : Tensor(); });
      if (!hooked.insert(node).second) continue;
      Node& n = const_cast<Node&>(*node);
      n.register_prehook(
          [give_back](const TensorList& go) { return give_back ? go : TensorList(); });
      n.register_hook([give_back](const TensorList& gi, const TensorList&) {
        return give_back ? gi : TensorList();
      });
    }
    const TensorList with_hooks = call(g);
    RC_ASSERT(with_hooks.size() == plain.size());
    for (size_t i = 0; i < plain.size(); ++i) RC_ASSERT(bitwise_equal(with_hooks[i], plain[i]));
  }
}

// A hook multiplying value i's gradient by s makes the gradient of every leaf L
//   d total / d L = (the part through paths that avoid i) + s (the part through i),
// which is the derivative of the forward in which value i is replaced by
//   t0 + s (t - t0),  t0 the value at the leaves' current values (a constant),
// as that replacement has the value t0 there and derivative s times t's. So with hooks on a few
// values, the hooked gradients must equal central differences of that forward (composed the same
// way: a path through two hooked values is scaled by both).
AG_PROPERTY(HookProperties, ScalingHooksScaleExactlyTheGradientsThroughTheirValue) {
  const GraphSpec spec = *rc::gen::arbitrary<GraphSpec>();
  const EngineOptions options =
      all_option_combinations()[*rc::gen::inRange<int>(0, EngineOptions::kCombinations)];
  const BuiltGraph base = build_graph(spec);
  // A step may return its input itself (transpose2 of a 1-D value): a hook on it is a hook on
  // that earlier value, which the scaled forward below cannot tell apart, so only the first
  // value of each tensor is a candidate.
  std::vector<size_t> candidates;
  for (size_t i = 0; i < base.values.size(); ++i) {
    bool first = true;
    for (size_t j = 0; j < i && first; ++j) {
      first = base.values[j].impl().get() != base.values[i].impl().get();
    }
    if (first && site(base.values[i]) != nullptr) candidates.push_back(i);
  }
  const size_t n_hooked = *rc::gen::inRange<size_t>(1, std::min<size_t>(3, candidates.size()) + 1);
  std::map<size_t, double> scale;  // value -> its hook's factor
  for (size_t k = 0; k < n_hooked; ++k) {
    const size_t i = candidates[*rc::gen::inRange<size_t>(0, candidates.size())];
    scale[i] = *rc::gen::element(0.0, 0.5, 2.0, -1.5);
  }
  bool leaf_hooked = false;
  for (const auto& [i, s] : scale) {
    leaf_hooked = leaf_hooked || base.values[i].is_leaf();
    RC_LOG() << "hook on v" << i << ": times " << s << "\n";
  }
  RC_CLASSIFY(leaf_hooked, "a leaf hooked");
  RC_CLASSIFY(scale.size() > 1, "several values hooked");
  TensorList wrt;
  for (const Tensor& l : base.leaves) {
    if (l.requires_grad()) wrt.push_back(l);
  }

  // The hooked gradients, on a fresh build of the graph.
  TensorList hooked;
  {
    const BuiltGraph g = build_graph(spec);
    TensorList g_wrt;
    for (const Tensor& l : g.leaves) {
      if (l.requires_grad()) g_wrt.push_back(l);
    }
    for (const auto& [i, s] : scale) {
      const double factor = s;
      // An output that gets no gradient hands its hook none (a custom Function's other output).
      g.values[i].register_hook([factor](const Tensor& grad) {
        return grad.defined() ? ops::mul(grad, factor) : Tensor();
      });
    }
    hooked =
        grad({weighted_total(g.outputs)}, g_wrt, GradArgs().allow_unused().engine_options(options));
  }

  // The forward with each hooked value scaled about its value at `base`'s leaves.
  std::map<size_t, Tensor> at_base;
  for (const auto& [i, s] : scale) at_base[i] = base.values[i].detach();
  const Substitute scaled = [&](size_t id, const Tensor& t) {
    const auto it = scale.find(id);
    if (it == scale.end()) return t;
    const Tensor& t0 = at_base.at(id);
    return ops::add(t0, ops::mul(ops::sub(t, t0), it->second));
  };
  auto forward = [&](const TensorList& leaves) {
    return weighted_total(build_graph(spec, &leaves, scaled).outputs).item();
  };
  constexpr double kEps = 1e-6, kAtol = 1e-5, kRtol = 1e-3;
  size_t w = 0;
  for (size_t l = 0; l < base.leaves.size(); ++l) {
    if (!base.leaves[l].requires_grad()) continue;
    const std::vector<double> x = base.leaves[l].to_vector();
    const std::vector<double> analytic =
        hooked[w].defined() ? hooked[w].to_vector() : std::vector<double>(x.size(), 0.0);
    ++w;
    for (size_t e = 0; e < x.size(); ++e) {
      auto at = [&](double delta) {
        TensorList leaves;
        for (size_t m = 0; m < base.leaves.size(); ++m) {
          std::vector<double> v = base.leaves[m].to_vector();
          if (m == l) v[e] += delta;
          Tensor t = ops::from_vector(v, base.leaves[m].shape(), DType::kFloat64);
          t.set_requires_grad(base.leaves[m].requires_grad());
          leaves.push_back(t);
        }
        return forward(leaves);
      };
      const double numeric = (at(kEps) - at(-kEps)) / (2 * kEps);
      RC_LOG() << "leaf " << l << " element " << e << ": hooked " << analytic[e]
               << ", finite differences " << numeric << "\n";
      RC_ASSERT(std::abs(analytic[e] - numeric) <= kAtol + kRtol * std::abs(numeric));
    }
  }
}

// The values the nodes of a built graph keep for backward (Note [Guarded saves]), counted by
// walking every value's history.
int64_t values_kept(const BuiltGraph& g) {
  std::vector<const Node*> stack;
  for (const Tensor& v : g.values) {
    if (v.grad_fn() != nullptr) stack.push_back(v.grad_fn().get());
  }
  std::set<const Node*> seen;
  int64_t kept = 0;
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    for (const Node::SavedValue& v : n->saved_values())
      kept += v.state == Node::SavedValue::State::kKept;
    for (const Edge& e : n->next_edges()) {
      if (e.is_valid()) stack.push_back(e.function.get());
    }
  }
  return kept;
}

// Note [Saved-tensor hooks]: saved-tensor hooks that pack a value as itself and unpack it as is
// change no gradient, bitwise, and are handed exactly the values the same graph keeps without
// them: what the guards chose under the options, no more, no fewer.
AG_PROPERTY(HookProperties, IdentitySavedTensorHooksChangeNothingAndPackWhatTheGraphKeeps) {
  const GraphSpec spec = *rc::gen::arbitrary<GraphSpec>();
  const EngineOptions options =
      all_option_combinations()[*rc::gen::inRange<int>(0, EngineOptions::kCombinations)];
  OptionsGuard guard(options);  // read when the ops record (guard_saves) and by the calls
  auto call = [&](const BuiltGraph& g) {
    return grad(g.outputs, g.requested,
                GradArgs().grad_outputs(output_grads(g.outputs)).allow_unused().retain_graph());
  };
  const BuiltGraph plain = build_graph(spec);
  const int64_t kept = values_kept(plain);
  const TensorList want = call(plain);
  int64_t packs = 0;
  std::unique_ptr<BuiltGraph> hooked;
  {
    SavedTensorsHooks hooks(
        [&](const Tensor& t) -> std::any {
          ++packs;
          return t;
        },
        [](const std::any& p) { return std::any_cast<Tensor>(p); });
    hooked = std::make_unique<BuiltGraph>(build_graph(spec));
  }
  RC_CLASSIFY(packs > 0, "values packed");
  RC_ASSERT(packs == kept);
  const TensorList got = call(*hooked);
  RC_ASSERT(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) RC_ASSERT(bitwise_equal(got[i], want[i]));
}

}  // namespace
}  // namespace ag::proptests
