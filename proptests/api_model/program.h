#pragma once

// The program the API model records: one node per autograd node PyTorch would create, with the
// values each op saw, so that expected gradients can be computed without the engine.
//
// Note [Expected gradients]
// A node's inputs are Uses: either a constant (an input that did not require grad, or any input
// under no_grad) or a tracked edge to the node that produced the input, together with a snapshot
// of the input's value when the op ran. d(roots)/d(target) is computed by forward mode: seed one
// element of the target node with a dual tangent, re-evaluate every node that depends on it, and
// read the tangents of the roots (one pass per target element). A tracked input's value is its
// producer's value shifted by (snapshot - producer's recorded value): writes made behind
// autograd's back (no_grad, detached aliases) change values but not derivatives, as in
// PyTorch. A create_graph gradient is itself a node (kGrad) whose value is such a
// vector-Jacobian product; differentiating through it evaluates it one Dual level deeper, so
// second and third derivatives come out exact too.
//
// Note [Tangents of gradients]
// Forward over reverse: inside a dual level a backward's formulas are ops, so a gradient carries
// a tangent (PyTorch's SavedVariable keeps a saved value's forward grad; grad_outputs may be
// dual). Each Use records the tangent its input had when the op ran, at that dual level
// (Use::tangent_level: a later level sees none). A gradient's tangent is the directional
// derivative of its vector-Jacobian product along those tangents: each node's local Jacobian
// moves with the tangent recorded at *that node* (not the one its producer's jvp would give: a
// make_dual of an intermediate has a tangent of its own), and the grad_outputs with theirs. By
// the product rule that is one more Dual level over vjp (vjp_along_tangents: the innermost level
// carries the tangents, input_value sets it at every use). Whether it is defined (None or a
// tensor, even of zeros) follows the formulas (vjp_tangent, grad_tangents.cc): from the roots
// down, the gradient along an edge has one iff the incoming gradient has one or the edge's
// formula reads a saved value that has one (op_rules.h; a result has one iff an input had); a
// constant formula (copy_'s self, pow(x, 0)) gives none. A write through a view saves the
// view's old value with the view's own tangent (the base's Use carries it at the view's
// elements). Not followed (the tangent is unknown, never checked): a gradient whose cone holds
// a create_graph gradient (double backward's formulas, and one Dual level too deep), a saved
// value or grad_output whose tangent the model did not know, a custom Function that a gradient
// with a tangent reaches (its backward's ops are the user's), an output the engine's gradient
// reaches only as zeros (Semantics::reached_node_gives_zeros). A write through a view hands the
// base's old history the incoming gradient with the written part replaced, so its tangent too,
// zeros where a copy_ wrote, also for a view of the whole base. A leaf's first .grad without
// create_graph is the gradient stolen (detached: no tangent) or cloned where PyTorch's
// AccumulateGrad cannot steal it (with it): unknown where the gradient has one. A .grad summed in
// place whose storage other tensors share (its views, or what it views) makes all of them
// unknown.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ops/op_list.h"
#include "proptests/api_model/values.h"
#include "proptests/op_traits.h"

namespace ag::proptests {

// A node's kind: a leaf, an op of the op list (ops/op_list.h: only its names, none of the
// engine's semantics), or one of the model's own kinds. The traits table's kApiModel column says
// which of the list's ops the model has rules for (Note [Op traits], proptests/op_traits.h).
// clang-format off
#define AG_API_MODEL_OP(Name, name, rule) k##Name,
enum class OpKind : uint8_t {
  kLeaf,  // a leaf's gradient accumulator; its value is zero (uses add their snapshots)
  // The list's ops. kReshape is also the regenerated history of a view; kMatmul stands for mm,
  // bmm and matmul (one definition); kAddInplace's inputs are self before the write, and other.
  AG_OPS(AG_API_MODEL_OP)
  kStridedView,    // a view: element k reads element attrs.index[k] of its input
  kInplaceOnView,  // a base written through a view: attrs.inner on the view attrs.index reads
  kCustomMul,      // custom Functions (proptests/api_model/custom_functions.h)
  kCustomTwo,      // two outputs: p * q and p + q
  kGrad,           // a gradient computed with create_graph
};
// clang-format on
#undef AG_API_MODEL_OP

// The traits of an elementwise unary op of the list (Note [Op traits]), or null for any other
// kind.
const proptests::OpTraits* unary_traits(OpKind kind);

const char* op_name(OpKind kind);

struct OpAttrs {
  double scalar = 0;
  int64_t dim0 = 0, dim1 = 0;
  bool keepdim = false;
  Dims shape;                          // kReshape, kStridedView, kInplaceOnView: the view's shape
  OpKind inner = OpKind::kAddInplace;  // kInplaceOnView: the in-place op
  // kStridedView, kInplaceOnView: the input element each element of the view reads (Note [Model
  // layouts]); kInplaceOnView: also, per element of the base, the element of the view written
  // into it, or -1. Shared: nodes are copied often.
  std::shared_ptr<const std::vector<int64_t>> index, written_from;
  // kStridedView: a view's history regenerated after a write (PyTorch's AsStridedBackward0, whose
  // gradient for a zero-size view is constant zeros).
  bool regenerated = false;
  // kSplit (split, chunk, unbind): per output, its shape and the input elements it reads.
  std::shared_ptr<const std::vector<std::pair<Dims, std::vector<int64_t>>>> parts;
};

struct Ref {
  int node = -1;
  int slot = 0;
  bool operator==(const Ref& o) const { return node == o.node && slot == o.slot; }
  bool operator<(const Ref& o) const { return node < o.node || (node == o.node && slot < o.slot); }
};

struct Use {
  bool tracked = false;
  Ref ref;  // when tracked
  Dims shape;
  std::vector<double> snapshot;  // the value when the op ran
  // Note [Tangents of gradients]: the tangent the input had when the op ran (row-major), at
  // dual level `tangent_level` (0: none live, or it had none); unknown where the model did not
  // know it.
  int tangent_level = 0;
  bool tangent_unknown = false;
  std::vector<double> tangent;
  bool has_tangent_at(int level) const { return level > 0 && tangent_level == level; }
};

// A value a node keeps for its backward. Unpacking it in a backward call raises if its storage
// was written since (version check) or if a backward without retain_graph released it.
struct SavedSlot {
  int storage = -1;  // -1: a private copy nobody else can write (mul_'s old self)
  uint32_t version = 0;
  uint32_t used_by = 0;  // bit i: input i's formula uses this slot
  bool certain = true;   // false: PyTorch and the engine decompose the op differently
  Ref producer;          // the value's history when it requires grad (node -1 otherwise)
  // A leaf is saved as itself (as in PyTorch): a create_graph gradient reading it depends on it
  // iff it requires grad when the gradient is computed, not when it was saved.
  int leaf_impl = -1;
  bool via_view = false;  // saved as a view the op made of it (with that view's own history)
  // The saved-tensor-hooks scope that packed it, or -1 (Note [Model saved-tensor hooks],
  // model.h): a packed value is never version-checked.
  int packed_by = -1;
};

enum class Released : uint8_t { kNo, kMaybe, kYes };

// A create_graph gradient: sum over roots r of d(roots[r] * gos[r])/d(target).
// Tensor hooks scale the gradient at an edge before it flows on (Note [Model hooks], model.h):
// `scale` per edge (not the target's own), `target_scale` the target's own hooks that apply.
struct GradDef {
  std::vector<Use> roots;
  std::vector<Use> gos;
  Ref target;
  std::map<Ref, double> scale;
  double target_scale = 1.0;
  // The call that recorded it, as the number of nodes when that call began: the gradients one
  // call records share their backward graph (a retained .grad and a grad() result both read
  // the formulas of the nodes between them), so releasing one may release part of another.
  int call = -1;
};

struct Node {
  OpKind kind = OpKind::kLeaf;
  OpAttrs attrs;
  std::vector<Use> inputs;
  std::vector<Dims> out_shapes;
  std::vector<std::vector<double>> values;  // per output, when the node was recorded
  std::vector<SavedSlot> saved;
  bool unpack_all = false;  // custom Functions unpack every saved tensor whenever they run
  // Every saved value is unpacked times this (Note [Model saved-tensor hooks], model.h): the
  // formulas read scaled values, so the node's vjp is its Jacobian at the scaled inputs.
  double saved_scale = 1.0;
  // kGrad: its definition and the values its backward graph hangs on (its edges).
  GradDef grad;
  std::vector<Ref> grad_edges;
  int depth = 0;       // Dual levels its evaluation needs (kGrad: 1 + those of its cone)
  int leaf_impl = -1;  // kLeaf: the leaf it accumulates into
};

// (storage, version) pairs: values a create_graph gradient's backward graph may have saved.
using Watch = std::vector<std::pair<int, uint32_t>>;

// Nodes never change once added (they are shared between copies of the model, which RapidCheck
// makes often); what a backward call changes lives beside them.
class ApiProgram {
 public:
  const Node& node(int n) const { return *nodes_[n]; }
  int size() const { return static_cast<int>(nodes_.size()); }
  const std::vector<double>& value(const Ref& r) const { return nodes_[r.node]->values[r.slot]; }
  const Dims& shape(const Ref& r) const { return nodes_[r.node]->out_shapes[r.slot]; }

  Released released(int n) const { return released_[n]; }
  void set_released(int n, Released r) { released_[n] = r; }
  // kGrad nodes: whether any value their graph may have saved has been written since.
  const Watch& watch(int n) const;
  void set_watch(int n, Watch w) { watch_[n] = std::move(w); }

  // Appends a node, computing its shapes and values (and, for kGrad, its depth) from its inputs
  // (kLeaf: from out_shapes).
  int add(Node node);

  // The graph edges of node n: (input index, edge), tracked inputs only (kGrad: grad_edges).
  std::vector<std::pair<int, Ref>> edges(int n) const;

  // d(sum_r roots[r] * gos[r]) / d(target) at the recorded values (Note [Expected gradients]).
  std::vector<double> vjp(const GradDef& def) const;

  // What node n's backward hands each of its inputs at the values it recorded, given the
  // gradient of each of its outputs (empty: none, taken as zeros): d(sum_s out_s * gos[s]) /
  // d(input i), one per input, whether or not it is tracked (Note [Model node hooks]).
  std::vector<std::vector<double>> input_vjp(int n,
                                             const std::vector<std::vector<double>>& gos) const;

  // The tangent the gradient `def` carries at dual level `level` (Note [Tangents of
  // gradients]): not known, None (not defined), or its values.
  struct GradTangent {
    bool known = false;
    bool defined = false;
    std::vector<double> values;
  };
  GradTangent vjp_tangent(const GradDef& def, int level) const;
  // The nodes between def's target and its roots, in order: those a perturbation of the target
  // changes and the roots depend on.
  std::vector<int> cone_of(const GradDef& def) const;
  // The directional derivative of vjp(def) along the tangents its nodes' inputs and its
  // incoming gradients had at dual level `level` (one Dual level deeper than vjp; def must need
  // only one: vjp_depth(def) == 1).
  std::vector<double> vjp_along_tangents(const GradDef& def, int level) const;

  // The Dual levels evaluating `def` needs; at most kMaxDepth can be evaluated.
  int vjp_depth(const GradDef& def) const;
  static constexpr int kMaxDepth = 2;

  // Values an op computes from its inputs' snapshots (the forward of every kind but kLeaf and
  // kGrad).
  static std::vector<Val<double>> forward(OpKind kind, const OpAttrs& attrs,
                                          const std::vector<Use>& inputs);
  // The directional derivative of that forward at the inputs' snapshots along `tangents` (one
  // per input, row-major; empty: zero), per output: one Dual level (Note [Model dual levels]).
  static std::vector<std::vector<double>> jvp(OpKind kind, const OpAttrs& attrs,
                                              const std::vector<Use>& inputs,
                                              const std::vector<std::vector<double>>& tangents);

 private:
  std::vector<std::shared_ptr<const Node>> nodes_;
  std::vector<Released> released_;
  std::map<int, Watch> watch_;
};

}  // namespace ag::proptests
