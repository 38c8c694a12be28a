#!/usr/bin/env python3
"""The mutant catalogue: each entry plants one realistic engine bug as a one-line change.

Writes proptests/mutants/<name>.patch for every entry (run it again after the code they touch
moves: each `old` must occur exactly once). tools/mutants.sh applies the patches one at a time to
a scratch copy and checks that `bazel test //...` fails.
"""
import difflib
import os

root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
M = [
 ("save_guard_drops_needed", "ops/spec.cc",
  "    if (requires[i] && (formulas_[i].uses_mask >> j & 1)) return true;",
  "    if (i == 0 && requires[i] && (formulas_[i].uses_mask >> j & 1)) return true;",
  "Save guard drops a value still needed: only the first input's formula is consulted."),
 ("save_guard_keeps_unneeded", "ops/spec.cc",
  "    if (requires[i] && (formulas_[i].uses_mask >> j & 1)) return true;",
  "    if (requires[i] || (formulas_[i].uses_mask >> j & 1)) return true;",
  "Save guard keeps values no formula can need: || instead of && keeps every slot once any input requires grad."),
 ("topo_nr_off_by_one", "engine/node.cc",
  "    topo = std::max(topo, e.function->topological_nr() + 1);",
  "    topo = std::max(topo, e.function->topological_nr());",
  "Topological number off by one: a parent gets the max over its children, not 1 + max."),
 ("topo_nr_not_frozen", "engine/node.cc",
  "  AG_CHECK(!has_parent() || topo == topological_nr_, \"set_next_edges: node '\", name(),",
  "  AG_CHECK(true || topo == topological_nr_, \"set_next_edges: node '\", name(),",
  "Topological number not frozen: a node with a parent may still change it."),
 ("discovery_cut_le", "engine/engine.cc",
  "  if (o.prune_by_topo_nr && node.topological_nr() < min_target_topo_nr_) return true;",
  "  if (o.prune_by_topo_nr && node.topological_nr() <= min_target_topo_nr_) return true;",
  "Discovery cut uses <= instead of <: nodes as tall as the lowest input are not expanded."),
 ("exec_info_marks_off_path", "engine/engine.cc",
  "        state.needed = edge.is_valid() && nodes_[edge.function.get()].receives_gradient();",
  "        state.needed = edge.is_valid() && nodes_[edge.function.get()].discovered;",
  "exec_info marks nodes off every root-to-input path: a node counts as needed when any child was merely discovered."),
 ("exec_info_misses_path", "engine/engine.cc",
  "        state.needed = edge.is_valid() && nodes_[edge.function.get()].receives_gradient();",
  "        state.needed = edge.is_valid() && nodes_[edge.function.get()].needed;",
  "exec_info misses path nodes: a node whose child is a requested input (but not needed) is not marked."),
 ("per_call_ignores_capture", "engine/engine.cc",
  "    return state != nullptr && state->receives_gradient();",
  "    return state != nullptr && state->needed;",
  "Per-call needs_input_grad ignores a captured input: a formula whose result only feeds a requested input is skipped."),
 ("per_call_option_ignored", "engine/call.h",
  "    if (!options_.per_call_needs_input_grad || plan_ == nullptr) return true;",
  "    if (plan_ == nullptr) return true;",
  "per_call_needs_input_grad=false is ignored: the old behaviour can no longer be selected."),
 ("formula_for_wrong_input", "ops/elementwise.cc",
  "                   {\"other\", {kSelf}, [](const Ctx& c) { return mul(c.grad(), c.saved(kSelf)); }}});",
  "                   {\"other\", {kSelf}, [](const Ctx& c) { return mul(c.grad(), c.saved(kOther)); }}});",
  "mul's gradient for `other` multiplies by `other` instead of `self` (a formula written for the wrong input)."),
 ("ready_queue_oldest_first", "engine/engine.cc",
  "    return a->sequence_nr() < b->sequence_nr();",
  "    return a->sequence_nr() > b->sequence_nr();",
  "Gradient accumulation order changed: the ready queue runs the oldest node first."),
 ("saved_not_released", "engine/engine.cc",
  "  if (!request_.keep_graph) node.release_saved();",
  "",
  "Saved tensors are not released after a backward without retain_graph."),
 ("version_not_bumped", "ops/inplace.cc",
  "  backend_for(a.device()).binary_inplace(BinaryKind::kAdd, a, b);\n  a.bump_version();",
  "  backend_for(a.device()).binary_inplace(BinaryKind::kAdd, a, b);",
  "add_ does not bump the version counter, so a saved tensor modified in place goes unnoticed."),
 ("view_base_not_rebased", "ops/views.cc",
  "  take_history(*v.view_base, rebased);",
  "  (void)rebased;",
  "An in-place op through a view leaves its base's history as it was, so gradients through the base miss the op."),
 ("stale_view_not_refreshed", "ops/views.cc",
  "  if (v.view_version.load(std::memory_order_relaxed) == version) return;",
  "  return;",
  "A view made before a write to its base keeps its old history, so gradients through it miss the write."),
 ("jit_stale_alias_entry", "engine/jit/alias_db.cc",
  "  if (const Element* e = elementOf(from)) element_of_[to] = *e;",
  "  if (const Element* e = elementOf(to)) element_of_[to] = *e;",
  "Incremental AliasDb: a merged value does not take over the aliasing of the value it replaces (stale entry)."),
 ("jit_move_across_write", "engine/jit/alias_db_move.cc",
  "    return !writes_.empty() && writes_.intersects(db_.reads(n));",
  "    return false;",
  "AliasDb moves: a node that reads what the moving group writes is not treated as a dependency, so a merge can move a node across a write."),
]
for name, path, old, new, desc in M:
    src = open(os.path.join(root, path)).read()
    assert src.count(old) == 1, (name, src.count(old))
    dst = src.replace(old, new) if new else src.replace(old + "\n", "")
    diff = difflib.unified_diff(src.splitlines(True), dst.splitlines(True), 'a/' + path, 'b/' + path)
    with open(os.path.join(root, 'proptests/mutants', name + '.patch'), 'w') as f:
        f.write('Mutant: ' + desc + '\n\n')
        f.writelines(diff)
print(f"wrote {len(M)} patches")
