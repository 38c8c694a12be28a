#include "proptests/graph_walk.h"

#include <algorithm>
#include <functional>

namespace ag::proptests {

std::vector<const Node*> reachable_nodes(const EdgeList& roots) {
  std::vector<const Node*> out;
  std::unordered_set<const Node*> seen;
  std::vector<const Node*> stack;
  for (const Edge& r : roots) {
    if (r.is_valid() && seen.insert(r.function.get()).second) stack.push_back(r.function.get());
  }
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    out.push_back(n);
    for (const Edge& e : n->next_edges()) {
      if (e.is_valid() && seen.insert(e.function.get()).second) stack.push_back(e.function.get());
    }
  }
  return out;
}

int64_t nodes_expanded_under_cuts(const EdgeList& roots, const EdgeList& targets,
                                  const EngineOptions& options) {
  uint64_t min_topo = UINT64_MAX;
  ReachSignature target_bits;
  for (const Edge& t : targets) {
    min_topo = std::min(min_topo, t.function->topological_nr());
    target_bits |= t.function->own_signature();
  }
  auto cut = [&](const Node* n) {
    if (targets.empty()) return false;
    return (options.prune_by_topo_nr && n->topological_nr() < min_topo) ||
           (options.prune_by_reachability && !n->reach_signature().intersects(target_bits));
  };
  int64_t expanded = 0;
  std::unordered_set<const Node*> seen;
  std::vector<const Node*> stack;
  auto visit = [&](const Edge& e) {
    if (!e.is_valid() || !seen.insert(e.function.get()).second || cut(e.function.get())) return;
    ++expanded;
    stack.push_back(e.function.get());
  };
  for (const Edge& r : roots) visit(r);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) visit(e);
  }
  return expanded;
}

std::unordered_set<const Node*> nodes_reaching(const EdgeList& roots, const EdgeList& targets) {
  std::unordered_set<const Node*> target_set;
  for (const Edge& t : targets) target_set.insert(t.function.get());
  std::unordered_map<const Node*, bool> memo;
  // reaches(n): n is a target or has a child that reaches one.
  std::function<bool(const Node*)> reaches = [&](const Node* n) -> bool {
    auto it = memo.find(n);
    if (it != memo.end()) return it->second;
    bool r = target_set.count(n) > 0;
    for (const Edge& e : n->next_edges()) {
      if (e.is_valid() && reaches(e.function.get())) r = true;
    }
    return memo[n] = r;
  };
  std::unordered_set<const Node*> out;
  for (const Node* n : reachable_nodes(roots)) {
    if (reaches(n)) out.insert(n);
  }
  return out;
}

GradientUse::GradientUse(const EdgeList& targets) {
  for (const Edge& t : targets) targets_.insert({t.function.get(), t.input_nr});
}

bool GradientUse::edge_used(const Edge& e) {
  if (!e.is_valid()) return false;
  return targets_.count({e.function.get(), e.input_nr}) > 0 || node_runs(e.function.get());
}

bool GradientUse::node_runs(const Node* n) {
  auto it = runs_.find(n);
  if (it != runs_.end()) return it->second;
  bool runs = false;
  for (const Edge& e : n->next_edges()) runs = edge_used(e) || runs;
  return runs_[n] = runs;
}

std::set<uint64_t> nodes_on_paths_to(const EdgeList& roots, const EdgeList& targets) {
  GradientUse use(targets);
  std::set<uint64_t> out;
  for (const Node* n : reachable_nodes(roots)) {
    if (use.node_runs(n)) out.insert(n->sequence_nr());
  }
  return out;
}

}  // namespace ag::proptests
