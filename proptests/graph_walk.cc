#include "proptests/graph_walk.h"

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

std::set<uint64_t> nodes_on_paths_to(const EdgeList& roots, const EdgeList& targets) {
  const std::unordered_set<const Node*> reaching = nodes_reaching(roots, targets);
  std::set<uint64_t> out;
  for (const Node* n : reachable_nodes(roots)) {
    for (const Edge& e : n->next_edges()) {
      if (e.is_valid() && reaching.count(e.function.get())) {
        out.insert(n->sequence_nr());
        break;
      }
    }
  }
  return out;
}

}  // namespace ag::proptests
