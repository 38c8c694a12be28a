// Note [Tangents of gradients] (program.h): whether a gradient carries a tangent, and which.
#include <algorithm>
#include <map>
#include <set>

#include "proptests/api_model/op_rules.h"
#include "proptests/api_model/program.h"

namespace ag::proptests {
namespace {

bool bit(uint32_t mask, size_t i) { return (mask >> i) & 1u; }

enum class Carries { kNo, kYes, kUnknown };

Carries carries(const Use& u, int level) {
  if (!u.has_tangent_at(level)) return Carries::kNo;
  return u.tangent_unknown ? Carries::kUnknown : Carries::kYes;
}

// Whether the value a node saved from `source` (an input, its old self, or its result) carried
// a tangent at `level`: a result does iff an input did.
Carries saved_carries(const Node& node, int source, int level) {
  if (source >= 0) return carries(node.inputs[source], level);
  if (source == kSelfBefore) return carries(node.inputs[0], level);
  Carries out = Carries::kNo;
  for (const Use& u : node.inputs) {
    const Carries c = carries(u, level);
    if (c == Carries::kUnknown) return c;
    if (c == Carries::kYes) out = c;
  }
  return out;
}

bool is_custom(OpKind kind) { return kind == OpKind::kCustomMul || kind == OpKind::kCustomTwo; }

}  // namespace

ApiProgram::GradTangent ApiProgram::vjp_tangent(const GradDef& def, int level) const {
  GradTangent out;
  const std::vector<int> nodes = cone_of(def);
  const std::set<int> in_cone(nodes.begin(), nodes.end());
  // Whether the gradient arriving at a node of the cone (at any of its outputs) carries one.
  std::map<int, bool> dual;
  bool result = false;
  auto arrive = [&](const Ref& at, bool d) {
    if (at == def.target) {
      result = result || d;
    } else if (in_cone.count(at.node)) {
      dual[at.node] = dual[at.node] || d;
    }
  };
  for (size_t r = 0; r < def.roots.size(); ++r) {
    const Carries c = carries(def.gos[r], level);
    if (c == Carries::kUnknown) return out;
    arrive(def.roots[r].ref, c == Carries::kYes);
  }
  // From the roots down: a node's formula for input i gives a gradient with a tangent iff the
  // incoming one has one or it reads a saved value that has one; a constant formula never does.
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node& node = this->node(*it);
    if (node.kind == OpKind::kGrad) return out;  // double backward's formulas: not followed
    const OpRules rules = op_rules(node.kind, node.attrs);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Use& u = node.inputs[i];
      if (!u.tracked || bit(rules.constant_formulas, i)) continue;
      bool d = dual[*it];
      for (const SlotRule& s : rules.slots) {
        if (!bit(s.used_by, i)) continue;
        const Carries c = saved_carries(node, s.source, level);
        if (c == Carries::kUnknown) return out;
        d = d || c == Carries::kYes;
      }
      if (d && is_custom(node.kind)) return out;  // a custom backward under forward AD
      arrive(u.ref, d);
    }
  }
  out.known = true;
  out.defined = result;
  if (result) out.values = vjp_along_tangents(def, level);
  return out;
}

}  // namespace ag::proptests
