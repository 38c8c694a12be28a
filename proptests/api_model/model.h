#pragma once

// The API model: what PyTorch's rules say the state of every tensor the user holds is after
// each call (values, requires_grad, is_leaf, versions, which tensors share storage, `.grad`),
// which calls must raise, and what every gradient must be. It never calls the engine; the state
// machine (commands.h) runs each call on the engine and on the model and compares.
//
// Note [Model state]
// Storages hold values and a version counter. Impls are tensor objects: a shape over a storage,
// autograd metadata, and `.grad` (another impl). The user holds handles: names bound to impls
// (two names may be one impl: dropout(t, 0) returns t). Histories are nodes of a ApiProgram
// (program.h) that mirror the nodes PyTorch records.
// An impl reads its storage through a layout (Note [Model layouts], layouts.h). Views (reshape
// where the strides allow it, view, transpose, select, slice, expand, ...) are differentiable
// views of a root base, as in PyTorch: an in-place op through a view gives the base a new history
// (CopySlices, here kInplaceOnView) and the view a fresh view of it; a view whose storage version
// moved since its history was recorded gets a regenerated history (a new node) when next used,
// and reports requires_grad/is_leaf as if it had been regenerated already. detach() is a
// non-differentiable alias: same storage, layout and version counter, no view relation.
//
// Note [Uncertain state]
// A backward that raises part way (a stale saved value, a freed graph, a leaf moved into the
// graph's interior) may already have accumulated into some `.grad` and freed some saved values;
// where a raise is only possible (kMaybe) the model does not know either. Instead of guessing,
// the model makes both sides agree again: the runner drops the `.grad` of every tensor the call
// could have accumulated into (Outcome::dropped), tensors sharing storage with a `.grad` that may
// have been written in place become unknown ("dead": never checked or used again), and saved
// values the call may have freed become "maybe freed" (a later backward through them may raise).

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "proptests/api_model/layouts.h"
#include "proptests/api_model/program.h"

namespace ag::proptests {

struct StorageState {
  std::vector<double> values;
  uint32_t version = 0;
  // False for the storages backward() and grad() create: PyTorch's own buffers may already have
  // been written in place, so only the version's changes from then on are part of the contract.
  bool version_from_zero = true;
  bool unknown = false;  // Note [Uncertain state]: values and version no longer known
};

// How a view was made (PyTorch's CreationMeta, Note [Model view kinds]).
enum class Made : uint8_t { kViewOp, kNoGrad, kMultiOutput };

// A tensor's tangent at the live dual level (Note [Model dual levels]).
enum class Tangent : uint8_t { kNone, kKnown, kUnknown };

struct ImplState {
  Dims shape;
  Dims strides;  // with offset: its layout over its storage
  int64_t offset = 0;
  // False where PyTorch's strides follow its formulas (grad() results, a non-leaf's .grad, a sum
  // into .grad under create_graph) and what is made of them: the model makes no reshape of them
  // and writes into none of their storage (Note [Model layouts]).
  bool layout_known = true;
  int storage = -1;
  int view_base = -1;         // a differentiable view: its root base (an impl)
  uint32_t seen_version = 0;  // a view: the version its history reflects
  Made made = Made::kViewOp;  // a view: how it was made
  Ref grad_fn;                // node -1: a leaf
  bool leaf_requires_grad = false;
  int accumulator = -1;  // a leaf's kLeaf node, once something recorded an edge to it
  int grad = -1;         // the impl held as .grad
  bool dead = false;     // Note [Uncertain state]
  // retain_grad() on this non-leaf, or backward(inputs=[it]): Note [Retained gradients].
  bool retains_grad = false;
  // Note [Model dual levels]: its tangent at the live level (row-major values when kKnown).
  Tangent tangent_kind = Tangent::kNone;
  std::vector<double> tangent;
  // Note [Model tangents of views]: the tensor whose tangent this one reads when it has none of
  // its own (PyTorch's forward view base: the root of a chain of view ops; -1 for make_dual's
  // result, a detach(), anything not a view), and the tangent family it shares values with.
  int fw_base = -1;
  int tangent_family = -1;
};

// Where the engine's rules differ from PyTorch's on purpose (or for now), one switch each; the
// README lists them with their reasons. The state machine checks the engine against engine();
// model_vs_pytorch checks the model itself against PyTorch with pytorch().
struct Semantics {
  // Formulas read saved values lazily: a backward call unpacks (version-checks, and finds freed)
  // only what the formulas it evaluates read. PyTorch unpacks every saved value of a node it runs.
  bool unpacks_only_what_formulas_read = true;
  // grad() of an output of a node the roots reach, whose own edge gets nothing (a multi-output
  // node's other output): zeros; PyTorch: not used in the graph (error or None).
  bool reached_node_gives_zeros = true;
  // A grad()/backward(inputs=...) call runs a node iff one of its edges leads to a requested
  // edge (node and output slot): per-call needs per edge. PyTorch runs every node with a path to
  // the node a requested tensor comes from, whichever of its outputs that tensor is, so it also
  // unpacks (and version-checks) what those extra nodes saved.
  bool runs_only_paths_to_requested_edges = true;
  // A base written through a view (CopySlices, kInplaceOnView) can be differentiated again
  // after a backward without retain_graph, unless the in-place op itself saved a value that was
  // freed. PyTorch's CopySlices drops the in-place op's backward on release and refuses to run
  // again ("backward through the graph a second time"); so does the engine (Note [Written
  // through a view], ops/views.h), so the switch is off for both.
  bool copy_slices_runs_after_release = false;
  // backward() without inputs evaluates a formula only for an edge that leads to a leaf that
  // requires grad when the call runs (per-call needs_input_grad; a leaf whose requires_grad was
  // turned off after the graph was built counts for nothing), so a node that no gradient reaches
  // is not called and unpacks nothing. But a node with a post-hook evaluates every formula of a
  // tracked input, for the hook's grad_inputs, and the nodes those gradients reach are called
  // (Note [Post-hooks see every executed gradient], engine/hooks.h; BackwardWalk::computes).
  // PyTorch evaluates every formula and calls every node.
  bool backward_computes_only_gradients_for_leaves_that_want_them = true;
  // backward(inputs=[t]) with a non-leaf t runs only the nodes on a path to t's edge, and takes
  // t's gradient there. PyTorch marks t's own grad_fn as needed and runs it too (PyTorch issue
  // 92331: it unpacks, and without retain_graph frees, what that node saved), so the hooks of
  // all its outputs see their gradients.
  bool backward_skips_its_inputs_own_nodes = true;
  // A call's root gradient goes to the root's node only if the call runs that node or captures
  // a gradient there. PyTorch hands the gradient of a call's only root to its node directly (the
  // GraphTask's graph root), which runs its tensors' hooks even when the call needs nothing
  // from it: a tensor that retains grad there gets the root gradient.
  bool single_root_skips_unneeded_node = true;

  // A custom Function's needs_input_grad is per call (input i needed iff its edge leads to a
  // requested input), so its backward computes only those gradients and a post-hook sees None
  // for the others. PyTorch's is per graph: whether input i required grad when the forward ran
  // (the replay's CMul, Two and mul_scalar honour it, as the engine's do).
  bool custom_functions_see_per_call_needs = true;

  // A base written through a view gets a node of the engine's own shape (rebased_base, Note
  // [In-place ops on views] in ops/views.h: it sends the written part on to the in-place op's
  // node through the view), where PyTorch's CopySlices has the base's edge and the op's other
  // inputs' edges. A post-hook there sees other grad_inputs, so the state machine registers no
  // node hooks on such a node (Note [Model node hooks]).
  bool written_base_is_not_copy_slices = true;

  // torch.add(t, 0.5) records the number as a second input without an edge (a wrapped
  // number), whose gradient a post-hook is handed as None; the engine's add of a scalar has one
  // input.
  bool scalar_add_has_one_input = true;

  // self.mul_(other)'s new tangent reads other's values from before the write. PyTorch's formula
  // reads them after it, which differs where other shares self's memory (x.mul_(x): t x + t x^2
  // instead of 2 x t; DEVIATIONS.md, inplace-mul-aliased-tangent; Note [Model tangents of views]).
  bool inplace_mul_tangent_reads_other_before_write = true;

  static Semantics engine() { return {}; }
  static Semantics pytorch() {
    return {false, false, false, false, false, false, false, false, false, false, false};
  }
};

// Note [Retained gradients]
// retain_grad() makes a non-leaf keep its gradient in .grad (on a leaf it does nothing; on a
// tensor that does not require grad it raises); backward(inputs=[t]) calls it on a non-leaf t,
// input by input, before it checks the next one. The hook sits at the tensor's edge (grad_fn and
// output slot) and moves along with its history (an in-place op, a view's history rebased or
// regenerated), so the model reads it from ImplState::grad_fn. Every later backward() or grad()
// in which a gradient arrives at that edge writes .grad: a copy of the gradient while .grad is
// None, then old + new, a new tensor each time (recorded under create_graph, as a leaf's
// accumulation is then). Whether a gradient arrives, and what it sums (Model::flow_into):
//   - backward() without inputs: every edge the roots reach gets its whole gradient (the
//     engine's per-call needs count a node with a retaining tensor as wanting its gradients).
//   - with inputs (grad(), backward(inputs=...)): the whole gradient if the edge's node runs or
//     the edge is requested. At another output slot of a requested tensor's node, PyTorch's too
//     (it runs every node on a path to that node); the engine's gets only the root gradients
//     sent straight there (runs_only_paths_to_requested_edges). PyTorch also runs a
//     backward(inputs=...) input's own node (backward_skips_its_inputs_own_nodes) and hands a
//     single root's gradient to its node whatever the call needs (single_root_skips_unneeded_node).
// A call that raises part way may have written some of them, and a .grad that the same call adds
// into in place may be read before or after that: those .grads are dropped (Note [Uncertain
// state]).

// Note [Model hooks]
// t.register_hook(fn) (t requires grad, else it raises) puts fn at t's edge as it is then: a
// non-leaf's grad_fn and output slot (a stale view's regenerated first), a leaf's accumulator.
// It stays there when t's history moves (only the retains-grad hook moves along, Note
// [Retained gradients]) until its handle's remove() (twice: a no-op). A hook fires exactly where
// a retained .grad at its edge would be written (Model::flow_into), with that same gradient as
// the hooks at the edge registered before it left it; each hook's factor (keep: 1) scales the
// gradient at its edge before it flows on (the forward-mode vjp scales that edge's tangent:
// GradDef::scale), so a retaining tensor's .grad and a leaf's accumulation see all the edge's
// factors, and so does a grad() result captured at a node that does not run; one whose node
// runs is captured before its hooks (Note [Hooks], engine/hooks.h). A node that runs, or
// captures, hands its hooks None for an output slot that got no gradient. The engine's per-call
// needs count a node with hooks as wanting its gradients (plan()'s to_leaf), as PyTorch's run.

// Note [Model node hooks]
// t.grad_fn.register_prehook(fn) and t.grad_fn.register_hook(fn) put fn on the node t's history
// is then (a stale view's regenerated first; only nodes PyTorch records as one node with the
// model's inputs: not matmul, linear, or the engine's composite mean, nor, for the engine, a base
// written through a view: written_base_is_not_copy_slices); they stay there when t's
// history moves, until remove(). Both run iff the node runs in the call (BackwardWalk::runs:
// not where it only captures, and, in PyTorch, also a backward(inputs=[t]) input's own node), in
// Note [Hooks]'s order (engine/hooks.h): the node's tensor hooks per slot, then its pre-hooks,
// then its post-hooks, each kind in registration order (Model::runs_before). A pre-hook is handed
// grad_outputs, one per output slot: the gradient that reached the slot after its tensor hooks
// (None where none did: flow_into), times the factors of the earlier pre-hooks. A post-hook is
// handed grad_inputs, one per input of the op (ApiProgram::input_vjp of grad_outputs after all
// pre-hooks, times the earlier post-hooks' factors; None for an input that was not tracked or
// whose gradient the call does not compute: per node in PyTorch, per edge in the engine, but in
// backward() without inputs every tracked one, in both, where the node has a post-hook; a custom
// Function in PyTorch computes what its static needs_input_grad asks for), then grad_outputs.
// A pre- or post-hook that returns its tensors times f scales every path through the node, so
// p.scale of each of the node's slots takes f; a grad() result captured at the node is taken
// before them.
// t.register_post_accumulate_grad_hook(fn) (t a leaf that requires grad, else it raises) puts fn
// on the leaf's AccumulateGrad: it runs after the leaf's tensor hooks where backward() runs that
// node (never in grad()), also when the leaf no longer requires grad (nothing accumulated), and
// logs the leaf's .grad as the call leaves it. The engine's per-call needs count a node with any
// hook as wanting its gradients (plan()'s to_leaf), as PyTorch runs every node of backward().

// Note [Model view kinds]
// As PyTorch's CreationMeta (Note [How a view was made], ops/views.h): a view made by a view op
// in grad mode (kViewOp) has a history that a write through it, or into its base, rewrites. The
// outputs of split, chunk and unbind made in grad mode (kMultiOutput) and every view made under
// no_grad (kNoGrad) have none: a write through them that would be recorded (grad mode on, and
// self or other requires grad) raises, and once their storage was written they regenerate no
// history: while they would (a history, or a base that requires grad) reading their grad_fn
// raises (`unreadable`): is_leaf, an op or view op of them in grad mode, a recorded write, a
// create_graph backward summing into a leaf's .grad that is one. Values, requires_grad, version
// and .grad still read. A view of such a view made in grad mode is of its
// kind; one made under no_grad is kNoGrad. A view made under no_grad of a tensor that requires
// grad requires grad, is a leaf and has no AccumulateGrad (`edgeless`): gradients through it reach
// nobody; the generator uses it only as the self of an in-place op and reads it.

// Note [Model dual levels]
// Forward mode as torch.autograd.forward_ad: at most one dual level is live (entering a second
// raises); exiting drops every tangent. make_dual(t, tangent) raises outside a level, for a
// tangent of another shape, and for a t that has a tangent already; its result is a view of t
// (ViewBackward0 where t requires grad: Model::view of t's own shape) carrying the tangent.
// Every other tangent is predicted, never read from the engine: an op's (ImplState::tangent)
// is J u at the inputs' values, by one Dual level over the op's definition (ApiProgram::jvp, a
// missing tangent being zero; grad mode plays no part); a view's is the same view of its input's
// tangent (element by memory position); detach() drops it; a leaf has none. A gradient that
// backward()/grad() computes inside a level carries a tangent, and so does a .grad written with
// it (forward over reverse): Note [Tangents of gradients] (program.h) says which. What the model
// does not follow is Tangent::kUnknown and never checked: the cases that Note lists, and any
// other tensor a backward()/grad() call makes while tangents live. In-place writes update
// tangents as Note [Model tangents of views] says; custom Functions with a dual operand are not
// generated inside a level (they have no jvp).

// Note [Model tangents of views]
// PyTorch's tangents alias as their primals do. A view made by a view op (in grad mode or not,
// split/chunk/unbind too) has a forward base, the root of its chain of view ops (fw_base); its
// tangent is that view of the base's tangent, and a view made while the base had none reads the
// base's as soon as it has one. make_dual's result and a detach() are no such views: they start
// a chain of their own. So the tensors reading one tangent (a family: tangent_family) are a root
// and its views, and they agree element by memory position. An in-place op (in grad mode or not)
// whose self or other has a tangent gives self the op's jvp at the operands' values before the
// write (copy_: other's tangent, or zeros); a self with a tangent takes it in place, so every
// member of its family sees the elements it wrote; a self without one first gives its forward
// base (itself if it has none) a zero tangent that its views read, then writes its part of it
// (Model::inplace_tangent). Writes into tensors of another family on the same storage (a
// make_dual of it) change their values, not their tangents. Where an operand's tangent, or that
// of a tensor on self's storage, is unknown, every tangent on that storage becomes unknown.
// PyTorch's mul_ reads other after the write (Semantics::inplace_mul_tangent_reads_other_before_
// write). Not modelled, so not generated: a recorded write into a view that has a tangent, which
// PyTorch refuses where that tangent view was made under no_grad and the new tangent requires
// grad (the model does not follow how tangent views were made, nor their requires_grad).

// Note [Model saved-tensor hooks]
// torch.autograd.graph.saved_tensors_hooks(pack, unpack) (engine/saved_tensor_hooks.h), entered
// and exited explicitly; scopes nest and the innermost open one applies. Every value an op saves
// while one is open (the slots add_saves keeps: derivatives.yaml's guarded saves, op_rules.h) is
// handed to its pack once (SavedHooksScope::packs counts them), and a value keeps the scope it
// was packed by. A packed value is never version-checked (PyTorch cannot follow a version
// through the hooks). Pack kinds: kKeep returns its input itself, so backward reads the
// storage as it is then: the generator makes no write into such a storage while the value
// lives (kept_by_pack), nor an in-place op with an operand sharing self's storage in such a
// scope (mul_(a, a) keeps a, then writes it), nor a backward that adds into a .grad kept so; kClone
// returns a copy made at the save, so later writes to the original are neither seen nor an error
// (the slot's storage is -1, a private copy). Unpack returns the packed value, or it times
// `unpack_scale`: the node's formulas then read scaled values (Node::saved_scale, program.h), so
// its vjp is its Jacobian at the scaled inputs (every formula of the model's ops reads the input
// values it depends on from saved values; those that read the result, from the scaled result). No
// create_graph call runs while a scope is open (the backward's own ops would pack values the
// model does not list) or through a scaled node (its unpacked value carries the original's
// history, so second derivatives are not the scaled Jacobian's), and no scope is open inside a
// dual level or a level entered inside a scope (tangents are computed by recorded ops, which
// save values too).
enum class PackKind : uint8_t { kKeep, kClone };

struct SavedHooksScope {
  PackKind pack = PackKind::kKeep;
  double unpack_scale = 1.0;  // 1: unpack returns what pack returned
  int packs = 0;              // pack calls so far
  bool open = true;
};

enum class Expect { kOk, kRaise, kMaybe };

// One tensor a hook is handed (undefined: None).
struct HookValue {
  bool defined = false;
  std::vector<double> grad;
};

// One hook call a backward()/grad() makes: what it is handed. A tensor hook: its gradient; a
// node pre-hook: grad_outputs (one per output slot); a post-hook: grad_inputs (one per input of
// the op) then grad_outputs; a post-accumulate-grad hook: the leaf's .grad.
struct HookFire {
  std::vector<HookValue> values;
};

// Note [Model hooks] and Note [Model node hooks].
enum class HookKind : uint8_t { kTensor, kPre, kPost, kPostAccumulate };

struct HookState {
  int impl = -1;
  Ref edge;             // a node hook: its node, slot 0; a post-accumulate one: the accumulator
  double factor = 1.0;  // 1: the hook returns nothing
  bool removed = false;
  HookKind kind = HookKind::kTensor;
  bool on_node() const { return kind == HookKind::kPre || kind == HookKind::kPost; }
};

// One gradient grad() returns.
struct ExpectedGrad {
  bool defined = false;
  std::vector<double> value;
  bool requires_grad = false;
};

// What the model predicts for one call.
struct Outcome {
  Expect expect = Expect::kOk;
  std::string rule;                        // why it raises (or may), for failure messages
  std::vector<ExpectedGrad> grads;         // grad(): one per input
  std::map<int, std::vector<bool>> needs;  // custom Function node -> needs_input_grad it sees
  std::vector<int> dropped;                // impls whose .grad the runner drops afterwards
  std::set<std::string> events;            // coverage labels for the runner (RC_TAG)
  std::map<int, HookFire> hooks;           // hook id -> what it is handed (Note [Model hooks])
  bool hooks_known = true;                 // false: the incoming gradients depend on the order
  // unpack_dual(t): the tangent it must return (None: undefined).
  bool tangent_checked = false;
  HookValue tangent;
  static Outcome raise(std::string why) {
    Outcome out;
    out.expect = Expect::kRaise;
    out.rule = std::move(why);
    return out;
  }
};

// The arguments of one backward() or grad() call, by name (the model's side of ag::BackwardArgs and
// ag::GradArgs).
struct CallArgs {
  std::vector<int> roots;         // names
  std::vector<int> grad_tensors;  // names, -1 for "none" (implicit ones); empty: all none
  std::vector<int> inputs;        // names; backward(): empty means every leaf
  int retain_graph = -1;          // -1: default (= create_graph), 0, 1
  bool create_graph = false;
  bool allow_unused = false;  // grad() only
};

class Model {
 public:
  explicit Model(Semantics semantics = Semantics::engine()) : sem_(semantics) {}
  const Semantics& semantics() const { return sem_; }

  // Queries on handles (names) and impls.
  bool has(int name) const;  // bound and not dead
  int impl_of(int name) const { return handles_.at(name); }
  const ImplState& impl(int i) const { return impls_[i]; }
  int num_impls() const { return static_cast<int>(impls_.size()); }
  const std::map<int, int>& handles() const { return handles_; }
  std::vector<int> names() const;  // usable names in order
  int next_name() const { return next_name_; }
  const Dims& shape(int name) const { return impls_[impl_of(name)].shape; }
  std::vector<double> values_of(int impl) const;  // row-major, through its layout
  Strided layout(int impl) const;
  // Whether some element of the impl's root base shares its memory with another (a detached
  // expand): the model makes no views of those.
  bool root_overlaps(int impl) const;
  // Why PyTorch refuses an in-place op on impl a with operand b for their memory, if it does.
  const char* overlap_error(OpKind kind, int a, int b) const;
  uint32_t version_of(int impl) const { return storages_[impls_[impl].storage].version; }
  bool version_from_zero(int impl) const {
    return storages_[impls_[impl].storage].version_from_zero;
  }
  bool requires_grad(int impl) const;
  bool is_leaf(int impl) const;
  bool is_view(int impl) const { return impls_[impl].view_base >= 0; }
  bool has_views(int impl) const;
  // Note [Model view kinds]: reading its grad_fn raises; a leaf view with no edge.
  bool unreadable(int impl) const;
  bool edgeless(int impl) const;
  // Whether an op saved this leaf while it did not require grad.
  bool saved_while_not_requiring_grad(int impl) const;
  // Whether a backward/grad from these roots with create_graph would differentiate through a
  // create_graph gradient (the model does not predict histories of third derivatives).
  bool reaches_grad_node(const std::vector<int>& root_names) const;
  // Whether a backward from this handle reaches the edge of a tensor that retains grad, or a
  // node with a live hook.
  bool reaches_retained(int root_name) const;
  const ApiProgram& program() const { return program_; }
  // The values an op (any kind but kLeaf and kGrad; in-place kinds: the written self) would
  // compute from these handles now; nothing if the call must raise for their shapes.
  std::vector<Val<double>> preview(OpKind kind, const OpAttrs& attrs,
                                   const std::vector<int>& operands) const;

  // Transitions. Each updates the state as the call does and says what the call must do.
  Outcome leaf(int name, const Dims& shape, const std::vector<double>& values, bool requires_grad);
  Outcome op(int name, OpKind kind, const OpAttrs& attrs, const std::vector<int>& operands);
  // reshape (a view where the strides allow it, else a copy) or view (which raises there).
  Outcome view(int name, int of, const Dims& shape, bool spelled_view = false);
  Outcome view_op(int name, int of, const ViewCall& call, bool no_grad = false);
  // split, chunk or unbind: one view per name.
  Outcome multi_view(const std::vector<int>& names, int of, const MultiCall& call, bool no_grad);
  Outcome alias(int name, int of);  // an op that returns its input itself
  Outcome detach(int name, int of);
  Outcome inplace(OpKind kind, int self, int other, bool no_grad);
  Outcome custom(OpKind kind, const std::vector<int>& out_names, int p, int q);
  Outcome set_requires_grad(int name, bool requires_grad);
  Outcome retain_grad(int name);
  Outcome register_hook(int id, int name, double factor);  // Note [Model hooks]
  // t.grad_fn.register_prehook / register_hook (Note [Model node hooks]).
  Outcome register_node_hook(int id, int name, HookKind kind, double factor);
  Outcome register_post_accumulate_grad_hook(int id, int name);
  // Whether t.grad_fn is a node whose PyTorch counterpart is one node with the model's inputs
  // (not matmul or linear, which PyTorch may record as several; not a create_graph gradient).
  bool node_hooks_allowed(int impl) const;
  Outcome remove_hook(int id);
  const std::map<int, HookState>& hooks() const { return hooks_; }
  // Whether hook a must run before hook b when both run in one call (Note [Hooks],
  // engine/hooks.h): at one node, tensor hooks (in registration order per slot), then pre-hooks,
  // then post- or post-accumulate-grad hooks, each kind in registration order.
  bool runs_before(int a, int b) const;
  int next_hook() const { return next_hook_; }
  // Whether a live hook was registered on this impl.
  bool has_hooks(int impl) const;
  Outcome set_grad(int name, int value);  // value -1: None
  Outcome take_grad(int name, int of);
  Outcome backward(const CallArgs& args);
  Outcome grad(const CallArgs& args, const std::vector<int>& result_names);
  // Note [Model dual levels].
  bool dual_live() const { return dual_live_; }
  Tangent tangent_kind(int name) const { return impls_[impl_of(name)].tangent_kind; }
  // Whether some live tensor may carry a tangent.
  bool any_tangent() const;
  // Whether the impl's storage is read by a tensor that carries (or may carry) a tangent: the
  // generator makes no in-place writes into it while a level is live.
  bool dual_storage(int impl) const;
  Outcome enter_dual_level();
  Outcome exit_dual_level();
  // fwAD.make_dual(t, tangent), the tangent a fresh tensor of `tangent_shape`.
  Outcome make_dual(int name, int of, const Dims& tangent_shape,
                    const std::vector<double>& tangent);
  Outcome unpack_dual(int name) const;
  // Note [Model saved-tensor hooks].
  Outcome open_saved_hooks(PackKind pack, double unpack_scale);
  Outcome close_saved_hooks();  // the innermost open scope
  const std::vector<SavedHooksScope>& saved_hooks() const { return scopes_; }
  int innermost_saved_hooks() const { return open_scopes_.empty() ? -1 : open_scopes_.back(); }
  // Whether the impl's storage holds a value a kKeep pack kept, which a backward may still read.
  bool kept_by_pack(int impl) const;
  // Whether some tensor's .grad is such a storage (backward would add into it in place).
  bool grad_kept_by_pack() const;
  // Whether a backward from these roots reaches a node whose saved values unpack scaled.
  bool reaches_scaled_unpack(const std::vector<int>& root_names) const;

  // What the runner's check leaves behind after every call: it reads each live tensor's
  // is_leaf, which brings a stale view's history up to date, in PyTorch as in the engine. That
  // moves a retains-grad hook along (Note [Retained gradients]), so retaining views are brought
  // up to date here too.
  void end_call();

  // The node that ran custom Function `out`'s forward (for the runner's needs_input_grad log).
  int grad_fn_node(int name) const { return impls_[impl_of(name)].grad_fn.node; }

 private:
  struct BackwardWalk;  // one backward call's graph walk (autograd_rules.cc)
  // What arrives at an edge in a call (Note [Retained gradients]): nothing, only the root
  // gradients sent straight to it, or everything on every path from the roots.
  enum class Flow { kNone, kRoots, kAll };
  struct RetainedWrite {
    int impl;
    Flow flow;
  };

  void reserve(int name) { next_name_ = std::max(next_name_, name + 1); }
  int new_storage(std::vector<double> values);
  int new_impl(Dims shape, int storage);
  int new_alias(int of, const Strided& layout);  // `layout` over of's storage, not a view
  // A differentiable view of `of` (not recorded), made as Note [Model view kinds] says.
  int new_view(int of, const Strided& layout, bool no_grad = false);
  // The element of root base `root` each element of `view` reads.
  std::vector<int64_t> index_in_root(int view, int root) const;
  // Writes `values` (row-major) through the impl's layout.
  void write(int impl, const std::vector<double>& values);
  void bind(int name, int impl);
  // The impl's history edge, regenerating a stale view's first and creating a leaf's
  // accumulator on first use.
  Ref edge(int impl);
  void refresh_view(int impl);
  // Whether a stale view gets a new history (a node reading its base) when next used.
  bool regenerates(int impl) const;
  // The impl as an op input: tracked when `track` and it requires grad.
  Use use_of(int impl, bool track);
  Ref add_node(Node node);
  void add_saves(Node& node, const std::vector<int>& operand_impls);
  // Hands what the node saves to the innermost open saved-tensor-hooks scope's pack, if any.
  void pack_saves(Node& node);
  // Whether a backward from these roots reaches a node satisfying `pred`.
  template <typename Pred>
  bool reaches(const std::vector<int>& root_names, Pred pred) const;
  void kill_storage(int storage);

  Outcome validate(const char* api, const CallArgs& args);
  // `backward_inputs`: the targets are backward(inputs=...)'s (PyTorch runs their own nodes).
  BackwardWalk plan(const CallArgs& args, const std::vector<Ref>& targets, bool backward_inputs);
  // What the call must raise, given the storages it writes itself while running.
  Outcome execute_checks(const BackwardWalk& plan, const std::set<int>& written);
  void release(const BackwardWalk& plan, const CallArgs& args, bool certain);
  void release_call_siblings(int grad_node);
  void forget_grads(Outcome& out, const CallArgs& args, const std::vector<int>& targets);
  Ref grad_history(const BackwardWalk& plan, const Ref& target, Watch* watch,
                   bool* through_other_target, double target_scale);
  // The product of the factors of the live hooks at edge e (with ids below `before`).
  double factor_at(const Ref& e, int before = 1 << 30) const;
  void fire_hooks(const BackwardWalk& plan, Outcome& out) const;
  // Note [Model node hooks]: pre- and post-hooks of the nodes that run.
  void fire_node_hooks(const BackwardWalk& plan, Outcome& out) const;
  // Post-accumulate-grad hooks of the leaves whose AccumulateGrad runs (after accumulation).
  void fire_post_accumulate_hooks(const BackwardWalk& plan, Outcome& out) const;
  // The product of the factors of node n's live pre-hooks (kPre) or post-hooks (kPost), with
  // ids below `before`.
  double node_factor(int n, HookKind kind, int before = 1 << 30) const;
  // `tangent`: the tangent g carries (Note [Tangents of gradients], program.h).
  void accumulate(int impl, const std::vector<double>& g, Ref history, bool create_graph,
                  const ApiProgram::GradTangent& tangent);
  // Note [Retained gradients].
  void retain(int impl);
  Flow flow_into(const BackwardWalk& plan, const Ref& edge) const;
  std::vector<RetainedWrite> retained_writes(const BackwardWalk& plan) const;
  // Writes one retaining tensor's .grad, noting what a create_graph gradient's graph reads.
  void write_retained(const BackwardWalk& plan, const RetainedWrite& w, bool create_graph,
                      Outcome& out, Watch* watch, std::vector<int>* grad_nodes);
  void write_all_retained(const BackwardWalk& plan, const std::vector<RetainedWrite>& retained,
                          const std::set<int>& written, bool create_graph, Outcome& out,
                          Watch* watch, std::vector<int>* grad_nodes);
  void forget_retained(Outcome& out, const std::vector<RetainedWrite>& writes);
  // Note [Model dual levels]: the tangents of an op's results (J u, by dual numbers from the
  // op's definition), of a view (the same view of its input's tangent), and after a backward.
  void op_tangents(const std::vector<int>& results, OpKind kind, const OpAttrs& attrs,
                   const std::vector<int>& operand_impls);
  void view_tangent(int view, int of);
  void copy_tangent(int to, int from);
  void new_tangent_family(int impl);
  // Note [Model tangents of views]: the tangents after self.op_(other), before the write.
  // Returns the event to count, or nullptr when no tangent is involved.
  const char* inplace_tangent(OpKind kind, int self, int other, const Use& self_use,
                              const Use& other_use);
  void set_no_tangent(int impl);
  // Every tensor on `storage` gets an unknown tangent (Note [Model tangents of views]).
  void unknown_tangents_on(int storage);
  // Note [Tangents of gradients] (program.h): what a gradient backward()/grad() computes now
  // carries; unknown where the model does not follow it. Returns the event to count, if any.
  const char* set_grad_tangent(int impl, const GradDef& def);
  ApiProgram::GradTangent grad_tangent(const GradDef& def) const;
  void set_tangent(int impl, const ApiProgram::GradTangent& t);
  // A .grad's tangent after `old + g` (out of place: `to` is a new tensor; in place: old itself).
  void sum_tangent(int to, int old, const ApiProgram::GradTangent& g);

  Semantics sem_;
  std::vector<StorageState> storages_;
  std::vector<ImplState> impls_;
  std::map<int, int> handles_;
  int next_name_ = 0;
  ApiProgram program_;
  std::map<int, HookState> hooks_;  // by id
  int next_hook_ = 0;
  bool dual_live_ = false;               // Note [Model dual levels]
  int dual_level_ = 0;                   // levels entered so far: the live one's number
  int next_tangent_family_ = 0;          // Note [Model tangents of views]
  std::vector<SavedHooksScope> scopes_;  // by id (Note [Model saved-tensor hooks])
  std::vector<int> open_scopes_;         // ids, innermost last
};

}  // namespace ag::proptests
