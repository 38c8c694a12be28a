// Comparing two AliasDbs over the live values of a graph.
//
// Two dbs are equivalent when, for every pair of live values of the top-level
// graph, they agree on mayAlias and mayContainAlias; for every live value on
// isTracked and hasWriters; and for every node and live value on whether the
// node reads or writes memory the value may refer to. Element numbering is
// irrelevant: only the relations are compared.
#pragma once

#include <optional>
#include <string>

#include "engine/jit/alias_db.h"
#include "engine/jit/ir.h"

namespace ag::jit {

// A description of the first disagreement found, or nullopt.
std::optional<std::string> findAliasDbDifference(const Graph& graph, const AliasDb& a,
                                                 const AliasDb& b);

inline bool isEquivalent(const Graph& graph, const AliasDb& a, const AliasDb& b) {
  return !findAliasDbDifference(graph, a, b).has_value();
}

}  // namespace ag::jit
