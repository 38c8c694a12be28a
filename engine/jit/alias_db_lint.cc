#include "engine/jit/alias_db_lint.h"

#include <vector>

namespace ag::jit {
namespace {

std::string yesNo(bool b) { return b ? "yes" : "no"; }

// What one db says about the graph, precomputed so that the pairwise
// comparisons below are plain set intersections.
struct Facts {
  std::vector<LocationSet> locations;  // per live value
  std::vector<LocationSet> contained;  // per live value
  std::vector<LocationSet> reads;      // per node
  std::vector<LocationSet> writes;     // per node

  Facts(const AliasDb& db, const std::vector<const Value*>& live,
        const std::vector<const Node*>& nodes) {
    for (const Value* v : live) {
      locations.push_back(db.memoryLocations(v));
      contained.push_back(db.containedMemoryLocations(v));
    }
    for (const Node* n : nodes) {
      reads.push_back(db.reads(n));
      writes.push_back(db.writes(n));
    }
  }
};

}  // namespace

std::optional<std::string> findAliasDbDifference(const Graph& graph, const AliasDb& a,
                                                 const AliasDb& b) {
  std::vector<const Value*> live(graph.inputs().begin(), graph.inputs().end());
  std::vector<const Node*> nodes;
  for (Node* n = graph.firstNode(); n != graph.returnNode(); n = n->next()) {
    nodes.push_back(n);
    live.insert(live.end(), n->outputs().begin(), n->outputs().end());
  }
  auto differ = [](const std::string& what, bool in_a, bool in_b) {
    return what + ": first db says " + yesNo(in_a) + ", second says " + yesNo(in_b);
  };

  for (const Value* v : live) {
    if (a.isTracked(v) != b.isTracked(v))
      return differ("tracked(%" + v->name() + ")", a.isTracked(v), b.isTracked(v));
    if (a.hasWriters(v) != b.hasWriters(v)) {
      return differ("hasWriters(%" + v->name() + ")", a.hasWriters(v), b.hasWriters(v));
    }
  }
  Facts fa(a, live, nodes);
  Facts fb(b, live, nodes);
  for (size_t i = 0; i < live.size(); ++i) {
    for (size_t j = i; j < live.size(); ++j) {
      std::string pair = "(%" + live[i]->name() + ", %" + live[j]->name() + ")";
      bool alias_a = fa.locations[i].intersects(fa.locations[j]);
      bool alias_b = fb.locations[i].intersects(fb.locations[j]);
      if (alias_a != alias_b) return differ("mayAlias" + pair, alias_a, alias_b);
      bool contain_a = fa.contained[i].intersects(fa.contained[j]);
      bool contain_b = fb.contained[i].intersects(fb.contained[j]);
      if (contain_a != contain_b) return differ("mayContainAlias" + pair, contain_a, contain_b);
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (size_t i = 0; i < live.size(); ++i) {
      std::string what = "(" + toString(*nodes[n]) + ", %" + live[i]->name() + ")";
      bool writes_a = fa.writes[n].intersects(fa.locations[i]);
      bool writes_b = fb.writes[n].intersects(fb.locations[i]);
      if (writes_a != writes_b) return differ("writesToAlias" + what, writes_a, writes_b);
      bool reads_a = fa.reads[n].intersects(fa.locations[i]);
      bool reads_b = fb.reads[n].intersects(fb.locations[i]);
      if (reads_a != reads_b) return differ("readsFromAlias" + what, reads_a, reads_b);
    }
  }
  return std::nullopt;
}

}  // namespace ag::jit
