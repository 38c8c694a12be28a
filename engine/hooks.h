#pragma once

// Hooks: functions a user registers on a tensor's gradient or on a node, which a backward pass
// runs around the node (Note [Hooks]). The registration API is on Tensor (register_hook,
// retain_grad, register_post_accumulate_grad_hook) and Node (register_prehook, register_hook);
// this file holds where the hooks live and what the engine calls.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/memory/ref.h"
#include "engine/node.h"
#include "engine/tensor.h"

namespace ag {

// Note [Hooks]
// PyTorch 2.15's hooks, kept where PyTorch keeps them and run where its engine runs them
// (engine/tests/hooks_test.cc pins each fact below against PyTorch, hooks_goldens.py):
//
// Where they live. Every hook lives on a node, in its NodeHooks: a tensor hook on the tensor's
// grad_fn, for its output slot (a leaf's on its AccumulateGrad, which the leaf keeps for its
// lifetime); the retains-grad hook (retain_grad()) likewise; pre- and post-hooks on the node
// itself; a leaf's post-accumulate-grad hooks on its AccumulateGrad. So a hook belongs to the
// history the tensor had when it was registered: after an in-place op gives the tensor a new
// grad_fn (or a view's is regenerated after a write to its base), the old hooks stay on the old
// node and still run when a gradient reaches it (never the write's own: a write through a view
// reads self past a view node with hooks, as PyTorch's CopySlices does, ops/inplace.cc), and new
// ones go on the new node; only the retains-grad hook moves along (retains_grad_moved, as
// PyTorch's update_tensor_hooks_on_new_gradfn). detach_() moves none: the retains-grad hook stays
// on the old node and still writes the (now leaf) tensor's .grad when a gradient reaches it. A view
// that requires grad only through its base (made with grad mode off) has no node a gradient
// reaches: a hook registered there never runs.
//
// The order, for one node taken off the ready queue:
//   1. its tensor hooks, grouped per output slot in the order each slot got its first hook,
//      each group in registration order, each hook handed the value the previous one left;
//   2. its retains-grad hooks: .grad of each retaining tensor becomes a copy of the gradient,
//      then old + new (a new tensor each time; recorded under create_graph);
//   3. its pre-hooks, on all the gradients it received;
//   4. apply();
//   5. for a leaf's AccumulateGrad, the leaf's post-accumulate-grad hooks (also when nothing
//      was accumulated: the leaf no longer requires grad, or the gradient is undefined), handed
//      the leaf. Not for a leaf nobody holds any more: PyTorch's graph keeps its leaves alive and
//      runs their hooks, this engine's graph keeps neither (engine/accumulate_grad.h);
//   6. its post-hooks, on (what apply() returned, what it was handed).
// A hook is handed undefined tensors for gradients the node did not receive (Python's None),
// and a node whose hooks would run runs them even when it receives nothing at all (apply() is
// then skipped, as before).
//
// Which nodes. 3 to 6 run iff the node runs in this call (Note [The backward pass], phase 3:
// PyTorch's exec_info); 1 and 2 also run for a node that does not run but holds a gradient
// that grad() or backward(inputs=...) captures (PyTorch's capture hooks: grad(z, [y]) runs y's
// hooks without running y's node, and returns what they left). A node the discovery cuts never
// expanded, or that the call does not run, runs none of its hooks; the cuts and per-call
// needs_input_grad only skip work that no hook can see (a post-hook sees what its node computes:
// Note [Post-hooks see every executed gradient]), so every option combination runs the
// same hooks in the same order (proptests/hook_properties.cc). One exception follows PyTorch's
// exec_info rather than the per-call view: backward() without inputs runs the AccumulateGrad of
// a leaf that no longer requires grad, and computes its gradient, iff that node has hooks (its
// hooks run; nothing is accumulated).
//
// A node that only captures takes every root gradient sent to it, not only its captured slots'
// (as PyTorch's input buffer holds them): its tensors' hooks see them.
//
// Where PyTorch runs more nodes (proptests/conformance/DEVIATIONS.md, extra-executions: the node
// of a single root that reaches no requested tensor, which PyTorch's graph root always runs, and
// nodes that reach only a sibling slot of a captured node) it runs their hooks too; the engine,
// which does not run them, does not. And PyTorch 2.15 moves the wrong retains-grad hook when an
// in-place op rewrites a retaining non-first output of a multi-output node (DEVIATIONS.md,
// retains-grad-moved-by-output-nr); the engine moves the tensor's own.
//
// A write through a view: PyTorch's CopySlices runs the in-place op's backward itself and
// scatters its gradient for the view's old value into the base's, so the view's old node is off
// the path. Here the in-place node reads self through a fresh view of the base (ops/inplace.cc
// self_of_write), not through the view's node, so hooks registered on the view before the write
// do not run, as in PyTorch.
//
// A captured gradient is taken after 1 and 2 when the node does not run, and before them when it
// does (PyTorch's evaluate_function: a needed node runs its tensor hooks later, in
// call_function): grad(z, [y, x]), x beneath y, returns y's gradient as it arrived, unhooked.
//
// backward(inputs=[t]) with a non-leaf t calls t.retain_grad(), as PyTorch's run_backward, so t
// keeps receiving .grad in every later call through it; for a leaf it runs the leaf's
// AccumulateGrad (Note [The backward pass], phase 1).
//
// Snapshots. Each of 1, 2, 3, 5 and 6 reads the node's hooks as they are when it starts: a hook
// that removes another of its phase does not stop it this time, and one registered during it runs
// from the next pass on (as PyTorch's hook dictionaries, which its engine copies before calling
// them). Registration and removal copy the node's table (copy on write) under its lock, so
// concurrent backward calls over one graph read a stable table without holding any lock.
//
// Errors. A hook's replacement must have the value's dtype, device and shape, and may not fill
// a gradient that was undefined; a node hook returns one value per slot or none. Each check
// names the node and the hook (its index among the node's hooks of its kind). A hook that throws
// ends the pass like any other error: the gradients of nodes not yet run are dropped, .grad
// writes already made stay, and the graph (with retain_graph) can be run again.
//
// Cost. A node without hooks costs the engine one load and one branch where it is run or
// captured (Node::has_hooks); a tensor one flag test when it dies.

// A hook on the gradient of one output slot: returns a replacement, or an undefined tensor.
using TensorHook = std::function<Tensor(const Tensor& grad)>;
using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;

// The link from a retains-grad hook to its tensor: a plain pointer that the tensor clears as it
// dies (TensorImpl::forget_retains_grad), as AccumulateGrad's to its leaf (Note [Intrusive
// reference counts]: nothing may take a Ref through it). The mutex is held while the hook writes
// .grad, so the tensor cannot finish dying meanwhile.
struct RetainedTensor {
  explicit RetainedTensor(TensorImpl* t) : tensor(t) {}
  std::mutex mutex;
  TensorImpl* tensor;
};

// The hooks on one node. A table that is never changed once published: registration and removal
// make a new one (Note [Hooks], Snapshots).
class NodeHooks {
 public:
  struct TensorHooks {
    uint32_t slot;
    std::vector<std::pair<uint64_t, TensorHook>> hooks;  // (id, hook), in registration order
  };
  struct Table {
    std::vector<TensorHooks> tensor;  // one group per slot, in the order of each first hook
    std::vector<std::pair<uint32_t, std::shared_ptr<RetainedTensor>>> retains_grad;  // per slot
    std::vector<std::pair<uint64_t, Node::PreHook>> pre;
    std::vector<std::pair<uint64_t, Node::PostHook>> post;
    // Handed the leaf if it is still alive: the hooks do not keep it, as a graph does not keep its
    // leaves (engine/accumulate_grad.h), so they die with it, as its .grad does.
    std::vector<std::pair<uint64_t, PostAccumulateGradHook>> post_accumulate;
    bool empty() const;
  };

  // The table as it is now; never null.
  std::shared_ptr<const Table> table() const;
  bool any() const { return any_.load(std::memory_order_acquire); }

  uint64_t add_tensor_hook(uint32_t slot, TensorHook hook);
  void add_retains_grad(uint32_t slot, std::shared_ptr<RetainedTensor> retained);
  // Takes out the retains-grad link of `tensor` (null if it has none here).
  std::shared_ptr<RetainedTensor> take_retains_grad(const TensorImpl* tensor);
  uint64_t add_pre_hook(Node::PreHook hook);
  uint64_t add_post_hook(Node::PostHook hook);
  uint64_t add_post_accumulate_hook(PostAccumulateGradHook hook);
  void remove(uint64_t id);

 private:
  // Applies `edit` to a copy of the table and publishes it; the old one is released after the
  // lock (it may hold the last reference to a leaf, whose death takes other locks).
  template <typename Edit>
  void update(Edit edit);

  mutable std::mutex mutex_;
  std::shared_ptr<const Table> table_ = std::make_shared<const Table>();
  std::atomic<bool> any_{false};
};

// What the engine calls (Note [Hooks], the order). `grads` are a node's input buffer, one per
// slot; each call reads the node's table once, when it starts.
void call_tensor_hooks(const Node& node, TensorList& grads);  // 1 and 2
void call_pre_hooks(const Node& node, TensorList& grads);     // 3
bool has_post_hooks(const Node& node);
void call_post_accumulate_grad_hooks(Node& node);  // 5; node is an AccumulateGrad
void call_post_hooks(const Node& node, TensorList& grad_inputs, const TensorList& grad_outputs);

// Note [Post-hooks see every executed gradient]
// A post-hook is handed grad_inputs, the gradients the node computed: PyTorch computes one for
// each input whose edge is on its graph task's executed path (needs_input_grad reads exec_info,
// not what lies behind the edge). In backward() without inputs that is every input that required
// grad in the forward, also one whose gradient reaches only a leaf that no longer requires grad
// (requires_grad_(False), detach_()), which the engine's per-call needs (Note [Per-call view],
// engine/call.h) would skip. So a node with post-hooks computes every gradient on an executed
// path (Call::needs_input_grad asks this first); with inputs (grad(), backward(inputs=...)) that
// is every used one, as without post-hooks. The gradients it computes go on along their edges: a
// node they reach runs, as in PyTorch (with nothing needed there it evaluates no formula and
// unpacks nothing, but a custom Function's backward is called, and a node whose history a
// backward freed raises: Note [Written through a view], ops/views.h), and they go no further; a
// leaf's AccumulateGrad that does not run (no requires_grad, no hooks) drops them. Everything
// else a hook or .grad can see was already computed: a node with any hook, or a retaining
// tensor's slot, wants its gradients (Note [The backward pass], phase 3). A node without hooks
// pays the one has_hooks() test.
inline bool computes_every_executed_gradient(const Node& node) {
  return node.has_hooks() && has_post_hooks(node);
}

// 1 to 6 around `apply`, which runs the node (4) on its gradients and returns its results.
template <typename Apply>
TensorList call_with_hooks(Node& node, TensorList&& grads, Apply&& apply) {
  call_tensor_hooks(node, grads);
  call_pre_hooks(node, grads);
  const bool post = has_post_hooks(node);
  TensorList grad_outputs;
  if (post) grad_outputs = grads;
  TensorList outputs = apply(std::move(grads));
  if (node.accumulates_into_leaf()) call_post_accumulate_grad_hooks(node);
  if (post) call_post_hooks(node, outputs, grad_outputs);
  return outputs;
}

// Moving the retains-grad hook along with a history (Note [Hooks], Where they live): before
// `t`'s grad_fn changes (an in-place op, a view regenerated or rebased), note where its hook is;
// after, move it from there to its grad_fn now. Both do nothing for a tensor that does not
// retain grad, which costs one flag test.
inline std::shared_ptr<Node> retains_grad_node(const TensorImpl& t) {
  return t.retains_grad ? t.grad_fn : nullptr;
}
void move_retains_grad(TensorImpl& t, const std::shared_ptr<Node>& old_fn);

// detach_() of a tensor that retains grad: its hook stays on `old_fn` (Note [Hooks], Where they
// live) and the tensor keeps retaining grad, as PyTorch's detach_() leaves both; the tensor, whose
// grad_fn that node no longer is, finds its hook through this when it dies.
void keep_retains_grad_on_old_node(const TensorImpl& t, const std::shared_ptr<Node>& old_fn);

// Which of a node's gradients its hooks see, for a backward() without inputs (Note [The backward
// pass], phase 3): all of them where it has any hook but a retains-grad one (a tensor hook, a
// pre- or post-hook, a post-accumulate-grad hook); else, for each input slot, whether a tensor
// that is still alive retains grad there. A retains-grad hook reads its own slot alone; one left
// behind by detach_() still writes its tensor's .grad, as PyTorch's (whose `retains_grad` stays
// True: found by fuzz --against pytorch). Returns kAll, or kSlots with `slots` (one flag per input
// slot), or kNone.
enum class HookWants { kNone, kSlots, kAll };
HookWants gradients_hooks_want(const Node& node, std::vector<char>* slots);

// What describe_graph shows of a node's hooks: how many of each kind.
struct HookCounts {
  size_t tensor = 0;  // tensor hooks, all slots
  size_t retains_grad = 0;
  size_t pre = 0;
  size_t post = 0;
  size_t post_accumulate = 0;
  bool any() const { return tensor + retains_grad + pre + post + post_accumulate > 0; }
};
HookCounts count_hooks(const Node& node);

}  // namespace ag
