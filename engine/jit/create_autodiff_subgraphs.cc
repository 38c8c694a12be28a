#include "engine/jit/create_autodiff_subgraphs.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "engine/jit/schema.h"
#include "engine/jit/subgraph_utils.h"

namespace ag::jit {

const char* modeName(AliasDbMode mode) {
  return mode == AliasDbMode::kRebuild ? "rebuild" : "incremental";
}

namespace {

class SubgraphSlicer {
 public:
  SubgraphSlicer(Graph& graph, const AutodiffSubgraphOptions& options)
      : graph_(graph), options_(options) {}

  AutodiffSubgraphStats run() {
    buildAliasDb();
    bool any_merged = true;
    while (any_merged) {
      any_merged = false;
      for (Node* n = graph_.lastNode(); n != graph_.returnNode();) {
        auto [next, merged] = scanNode(n);
        any_merged = any_merged || merged;
        n = next;
      }
    }
    unmergeSmallGroups();
    stats_.alias_db_elements_created += db_->numElementsCreated();
    return stats_;
  }

 private:
  static bool shouldConsiderForMerge(const Node* n) {
    return n->isDifferentiableGraph() || (n->schema() != nullptr && n->schema()->differentiable);
  }

  void buildAliasDb() {
    if (db_) stats_.alias_db_elements_created += db_->numElementsCreated();
    db_ = std::make_unique<AliasDb>(graph_);
    stats_.alias_db_constructions++;
  }

  // What the graph rewrites tell the AliasDb (Note [Incremental alias update]).
  ValueTracker tracker() {
    ValueTracker t;
    if (options_.mode == AliasDbMode::kIncremental) {
      t.copied = [this](const Value* from, Value* to) { db_->copyValue(from, to); };
      t.dropped = [this](const Value* v) { db_->forgetValue(v); };
    }
    return t;
  }

  void graphChanged(const std::string& what) {
    if (options_.mode == AliasDbMode::kRebuild) buildAliasDb();
    if (options_.after_each_change) options_.after_each_change(graph_, *db_, what);
  }

  // Returns the node to scan next (walking backwards) and whether a merge happened.
  std::pair<Node*, bool> scanNode(Node* consumer) {
    if (!shouldConsiderForMerge(consumer)) return {consumer->prev(), false};
    if (!consumer->isDifferentiableGraph()) {
      consumer = createSingletonGroup(consumer, tracker());
      stats_.singletons++;
      graphChanged("singleton");
    }
    // The loop ends at the first merge, before anything refills producers_.
    for (Node* producer : producersLatestFirst(consumer)) {
      if (!shouldConsiderForMerge(producer)) continue;
      if (!db_->moveBeforeTopologicallyValid(producer, consumer)) continue;
      mergeNodeIntoGroup(producer, consumer, tracker());
      stats_.merges++;
      graphChanged("merge");
      // The group's inputs changed: look at it again.
      return {consumer, true};
    }
    return {consumer->prev(), false};
  }

  // Fills and returns producers_, which keeps its capacity from one call to the next.
  const std::vector<Node*>& producersLatestFirst(const Node* group) {
    std::vector<Node*>& producers = producers_;
    producers.clear();
    for (const Value* in : group->inputs()) {
      Node* p = in->node();
      if (p == graph_.paramNode()) continue;
      if (std::find(producers.begin(), producers.end(), p) == producers.end())
        producers.push_back(p);
    }
    std::sort(producers.begin(), producers.end(),
              [](const Node* a, const Node* b) { return b->isBefore(a); });
    return producers;
  }

  void unmergeSmallGroups() {
    for (Node* n = graph_.firstNode(); n != graph_.returnNode();) {
      Node* next = n->next();
      if (n->isDifferentiableGraph() && groupSize(n) < options_.min_subgraph_size) {
        inlineGroup(n, tracker());
        stats_.unmerged_groups++;
        graphChanged("unmerge");
      } else if (n->isDifferentiableGraph()) {
        stats_.groups++;  // inlining makes no groups: this walk sees every group left
      }
      n = next;
    }
  }

  Graph& graph_;
  const AutodiffSubgraphOptions& options_;
  std::unique_ptr<AliasDb> db_;
  AutodiffSubgraphStats stats_;
  std::vector<Node*> producers_;  // producersLatestFirst's result
};

}  // namespace

AutodiffSubgraphStats createAutodiffSubgraphs(Graph& graph,
                                              const AutodiffSubgraphOptions& options) {
  return SubgraphSlicer(graph, options).run();
}

}  // namespace ag::jit
