#include "engine/describe_graph.h"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_set>
#include <vector>

#include "engine/engine.h"
#include "engine/forward_ad.h"
#include "engine/hooks.h"
#include "engine/node.h"

namespace ag {

namespace {

// One node as describe_graph shows it.
struct NodeView {
  const Node* node;
  std::string status;  // "runs", "captures input 0", "expanded", "cut"
  bool runs = false;
  bool target = false;
  bool cut = false;
  HookCounts hooks;
  // Note [Hooks]: all of a node's hooks run iff it runs; a node that only captures runs its
  // tensor and retains-grad hooks.
  size_t hooks_that_run() const {
    if (runs)
      return hooks.tensor + hooks.retains_grad + hooks.pre + hooks.post + hooks.post_accumulate;
    return target ? hooks.tensor + hooks.retains_grad : 0;
  }
};

struct GraphView {
  std::vector<NodeView> nodes;  // newest first
  size_t runs = 0;
  size_t saved_bytes = 0;
  size_t hooks = 0, hooks_that_run = 0;
  // Edges out of running nodes whose gradient the call computes: with per-call needs_input_grad
  // only those it uses, without it every edge into a node that requires grad.
  std::set<std::pair<const Node*, size_t>> computed_edges;

  bool computes(const NodeView& v, size_t edge) const {
    return v.runs && computed_edges.count({v.node, edge}) > 0;
  }
};

GraphView view_of(const TensorList& outputs, const TensorList& inputs,
                  const EngineOptions& options) {
  ExecuteRequest request;
  for (const Tensor& t : outputs) request.roots.push_back(gradient_edge(t));
  for (const Tensor& t : inputs) request.targets.push_back(gradient_edge(t));
  request.allow_unused = true;
  request.options = options;
  const ExecutionPlan plan = plan_execution(request);
  const std::unordered_set<const Node*> expanded(plan.expanded.begin(), plan.expanded.end());
  const std::unordered_set<const Node*> runs(plan.runs.begin(), plan.runs.end());

  // Every node reachable from the outputs, whatever the cuts.
  std::vector<const Node*> all;
  std::unordered_set<const Node*> seen;
  std::function<void(const Edge&)> walk = [&](const Edge& e) {
    if (!e.is_valid() || !seen.insert(e.function.get()).second) return;
    all.push_back(e.function.get());
    for (const Edge& next : e.function->next_edges()) walk(next);
  };
  for (const Edge& root : request.roots) walk(root);
  std::sort(all.begin(), all.end(),
            [](const Node* a, const Node* b) { return a->sequence_nr() > b->sequence_nr(); });

  GraphView view;
  if (options.per_call_needs_input_grad) {
    view.computed_edges.insert(plan.used_edges.begin(), plan.used_edges.end());
  } else {
    for (const Node* node : plan.runs) {
      for (size_t i = 0; i < node->num_outputs(); ++i) {
        if (node->next_edge(i).is_valid()) view.computed_edges.emplace(node, i);
      }
    }
  }
  for (const Node* node : all) {
    NodeView v{node, "", runs.count(node) > 0, false, false, {}};
    std::ostringstream status;
    if (v.runs) status << "runs";
    for (size_t i = 0; i < request.targets.size(); ++i) {
      if (request.targets[i].function.get() != node) continue;
      v.target = true;
      status << (status.tellp() > 0 ? ", " : "") << "captures input " << i;
    }
    if (status.tellp() == 0) {
      v.cut = expanded.count(node) == 0;
      status << (v.cut ? "cut" : "expanded");
    }
    v.status = status.str();
    v.hooks = count_hooks(*node);
    view.hooks += v.hooks.tensor + v.hooks.retains_grad + v.hooks.pre + v.hooks.post +
                  v.hooks.post_accumulate;
    view.hooks_that_run += v.hooks_that_run();
    view.runs += v.runs;
    for (const Node::SavedValue& s : node->saved_values()) view.saved_bytes += s.nbytes;
    view.nodes.push_back(std::move(v));
  }
  return view;
}

std::string saved_text(const Node& node) {
  std::ostringstream os;
  for (const Node::SavedValue& s : node.saved_values()) {
    os << (os.tellp() > 0 ? ", " : "") << s.name << " ";
    switch (s.state) {
      case Node::SavedValue::State::kKept:
        os << s.describe << " " << s.nbytes << " B";
        break;
      case Node::SavedValue::State::kReleased:
        os << "released";
        break;
      case Node::SavedValue::State::kNotKept:
        os << "not kept";
        break;
    }
  }
  return os.str();
}

// "2 tensor, 1 pre (would run)": the node's hooks by kind, and which of them this call runs.
std::string hooks_text(const NodeView& v) {
  const HookCounts& h = v.hooks;
  std::ostringstream os;
  auto part = [&](size_t n, const char* kind) {
    if (n > 0) os << (os.tellp() > 0 ? ", " : "") << n << " " << kind;
  };
  part(h.tensor, "tensor");
  part(h.retains_grad, "retains-grad");
  part(h.pre, "pre");
  part(h.post, "post");
  part(h.post_accumulate, "post-accumulate");
  const size_t all = h.tensor + h.retains_grad + h.pre + h.post + h.post_accumulate;
  const size_t run = v.hooks_that_run();
  os << (run == all ? " (would run)" : run == 0 ? " (would not run)" : " (tensor hooks would run)");
  return os.str();
}

// Note [Forward mode]: the tangents the tensors carry at each live dual level, one line each:
//   tangent: output 0 float64[3] at level 0
std::string tangents_text(const char* what, const TensorList& tensors) {
  std::ostringstream os;
  for (int level = 0; level < forward_ad::num_levels(); ++level) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor t = forward_ad::tangent(tensors[i], level);
      if (t.defined()) {
        os << "  tangent: " << what << " " << i << " " << t.describe() << " at level " << level
           << "\n";
      }
    }
  }
  return os.str();
}

}  // namespace

std::string describe_graph(const TensorList& outputs, const TensorList& inputs,
                           const EngineOptions& options) {
  const GraphView view = view_of(outputs, inputs, options);
  std::ostringstream os;
  os << "autograd graph of " << outputs.size() << " output(s), "
     << (inputs.empty() ? std::string("as backward() into every leaf")
                        : "as grad() w.r.t. " + std::to_string(inputs.size()) + " input(s)")
     << "; options: " << to_string(options) << "\n";
  os << tangents_text("output", outputs) << tangents_text("input", inputs);
  for (const NodeView& v : view.nodes) {
    os << "  #" << v.node->sequence_nr() << " " << v.node->name() << "  topo "
       << v.node->topological_nr() << "  " << v.status;
    const std::string saved = saved_text(*v.node);
    if (!saved.empty()) os << "  saved: " << saved;
    if (v.hooks.any()) os << "  hooks: " << hooks_text(v);
    os << "\n";
    for (size_t i = 0; i < v.node->num_outputs(); ++i) {
      const Edge& e = v.node->next_edge(i);
      if (!e.is_valid()) continue;
      os << "      -> #" << e.function->sequence_nr() << " " << e.function->name() << " ["
         << e.input_nr << "]";
      if (v.runs && !view.computes(v, i)) os << "  not computed";
      os << "\n";
    }
  }
  os << view.nodes.size() << " node(s), " << view.runs << " would run; " << view.saved_bytes
     << " B saved";
  if (view.hooks > 0)
    os << "; " << view.hooks_that_run << " of " << view.hooks << " hook(s) would run";
  os << "\n";
  return os.str();
}

std::string describe_graph_dot(const TensorList& outputs, const TensorList& inputs,
                               const EngineOptions& options) {
  const GraphView view = view_of(outputs, inputs, options);
  std::ostringstream os;
  os << "digraph autograd {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (const NodeView& v : view.nodes) {
    const uint64_t id = v.node->sequence_nr();
    os << "  n" << id << " [label=\"" << v.node->name() << " #" << id << "\\ntopo "
       << v.node->topological_nr();
    const std::string saved = saved_text(*v.node);
    if (!saved.empty()) os << "\\nsaved: " << saved;
    if (v.hooks.any()) os << "\\nhooks: " << hooks_text(v);
    os << "\"";
    if (v.runs) os << ", style=filled, fillcolor=\"#cfe2f3\"";
    if (v.cut) os << ", style=dashed, fontcolor=gray";
    if (v.target) os << ", penwidth=3";
    os << "];\n";
    for (size_t i = 0; i < v.node->num_outputs(); ++i) {
      const Edge& e = v.node->next_edge(i);
      if (!e.is_valid()) continue;
      os << "  n" << id << " -> n" << e.function->sequence_nr() << " [";
      if (e.function->num_inputs() > 1) os << "label=\"" << e.input_nr << "\", ";
      // Gradients the call computes are solid; those it skips (or never reaches) dotted.
      os << (view.computes(v, i) ? "style=solid" : "style=dotted, color=gray") << "];\n";
    }
  }
  os << "}\n";
  return os.str();
}

}  // namespace ag
