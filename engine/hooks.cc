// Note [Hooks] (engine/hooks.h): registration, removal, and the calls the engine makes.
#include "engine/hooks.h"

#include <string>
#include <unordered_map>

#include "engine/accumulate_grad.h"
#include "engine/error.h"

namespace ag {

namespace {

std::atomic<uint64_t> next_hook_id{1};
uint64_t new_hook_id() { return next_hook_id.fetch_add(1, std::memory_order_relaxed); }

template <typename List>
bool erase_id(List& list, uint64_t id) {
  for (auto it = list.begin(); it != list.end(); ++it) {
    if (it->first == id) {
      list.erase(it);
      return true;
    }
  }
  return false;
}

// The node and slot a hook on `t`'s gradient goes on: its grad_fn and output slot, or a leaf's
// AccumulateGrad; null for a view that requires grad only through its base (Note [Hooks]).
std::pair<std::shared_ptr<Node>, uint32_t> hook_site(const Tensor& t) {
  if (std::shared_ptr<Node> fn = t.grad_fn()) return {std::move(fn), t.output_nr()};
  if (t.impl()->requires_grad) return {grad_accumulator(t), 0};
  return {nullptr, 0};
}

std::string tensor_hook_name(const Node& node, uint32_t slot, size_t i) {
  if (node.accumulates_into_leaf()) {
    return "hook " + std::to_string(i) + " on the gradient of a leaf (AccumulateGrad)";
  }
  return "hook " + std::to_string(i) + " on the gradient of output " + std::to_string(slot) +
         " of '" + node.name() + "'";
}

std::string node_hook_name(const char* kind, const Node& node, size_t i) {
  return std::string(kind) + " " + std::to_string(i) + " of '" + node.name() + "'";
}

// PyTorch's check_single_result and check_variable_result, in their order.
void check_replacement(const Tensor& value, const Tensor& result, const std::string& hook) {
  AG_CHECK(value.defined(), hook, " can't replace a None gradient with a non-None value (got ",
           result.describe(), ")");
  AG_CHECK(result.dtype() == value.dtype(), hook, " has changed the type of value (was ",
           value.describe(), " got ", result.describe(), ")");
  AG_CHECK(result.device() == value.device(), hook, " has changed the device of value (was ",
           to_string(value.device()), " got ", to_string(result.device()), ")");
  AG_CHECK(result.shape() == value.shape(), hook, " has changed the size of value (was ",
           value.describe(), " got ", result.describe(), ")");
}

// A node hook's result: none (keep), or one value per slot; an undefined value clears its slot.
void replace_all(TensorList& values, TensorList&& results, const std::string& hook) {
  if (results.empty()) return;
  AG_CHECK(results.size() == values.size(), hook,
           " has returned an incorrect number of values (got ", results.size(), ", but expected ",
           values.size(), ")");
  for (size_t k = 0; k < values.size(); ++k) {
    if (results[k].defined()) check_replacement(values[k], results[k], hook);
  }
  for (size_t k = 0; k < values.size(); ++k) values[k] = std::move(results[k]);
}

std::shared_ptr<const NodeHooks::Table> table_of(const Node& node) {
  const NodeHooks* hooks = node.hooks_if_any();
  return hooks != nullptr ? hooks->table() : std::make_shared<const NodeHooks::Table>();
}

}  // namespace

// Registration and removal.

bool NodeHooks::Table::empty() const {
  for (const TensorHooks& group : tensor) {
    if (!group.hooks.empty()) return false;
  }
  return retains_grad.empty() && pre.empty() && post.empty() && post_accumulate.empty();
}

std::shared_ptr<const NodeHooks::Table> NodeHooks::table() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return table_;
}

template <typename Edit>
void NodeHooks::update(Edit edit) {
  std::shared_ptr<const Table> old;  // released after the lock
  std::lock_guard<std::mutex> lock(mutex_);
  auto fresh = std::make_shared<Table>(*table_);
  edit(*fresh);
  any_.store(!fresh->empty(), std::memory_order_release);
  old = std::exchange(table_, std::move(fresh));
}

uint64_t NodeHooks::add_tensor_hook(uint32_t slot, TensorHook hook) {
  const uint64_t id = new_hook_id();
  update([&](Table& t) {
    for (TensorHooks& group : t.tensor) {
      if (group.slot == slot) {
        group.hooks.emplace_back(id, std::move(hook));
        return;
      }
    }
    t.tensor.push_back({slot, {}});
    t.tensor.back().hooks.emplace_back(id, std::move(hook));
  });
  return id;
}

void NodeHooks::add_retains_grad(uint32_t slot, std::shared_ptr<RetainedTensor> retained) {
  update([&](Table& t) { t.retains_grad.emplace_back(slot, std::move(retained)); });
}

std::shared_ptr<RetainedTensor> NodeHooks::take_retains_grad(const TensorImpl* tensor) {
  std::shared_ptr<RetainedTensor> taken;
  update([&](Table& t) {
    for (auto it = t.retains_grad.begin(); it != t.retains_grad.end(); ++it) {
      if (it->second->tensor == tensor) {
        taken = std::move(it->second);
        t.retains_grad.erase(it);
        return;
      }
    }
  });
  return taken;
}

uint64_t NodeHooks::add_pre_hook(Node::PreHook hook) {
  const uint64_t id = new_hook_id();
  update([&](Table& t) { t.pre.emplace_back(id, std::move(hook)); });
  return id;
}

uint64_t NodeHooks::add_post_hook(Node::PostHook hook) {
  const uint64_t id = new_hook_id();
  update([&](Table& t) { t.post.emplace_back(id, std::move(hook)); });
  return id;
}

uint64_t NodeHooks::add_post_accumulate_hook(PostAccumulateGradHook hook) {
  const uint64_t id = new_hook_id();
  update([&](Table& t) { t.post_accumulate.emplace_back(id, std::move(hook)); });
  return id;
}

void NodeHooks::remove(uint64_t id) {
  update([&](Table& t) {
    for (TensorHooks& group : t.tensor) {
      // An emptied group keeps its place, as PyTorch's hook dictionary stays on the node.
      if (erase_id(group.hooks, id)) return;
    }
    if (erase_id(t.pre, id) || erase_id(t.post, id)) return;
    erase_id(t.post_accumulate, id);
  });
}

bool Node::any_hooks(const NodeHooks& hooks) { return hooks.any(); }

void Node::delete_hooks(NodeHooks* hooks) { delete hooks; }

NodeHooks& Node::hooks() {
  NodeHooks* existing = hooks_.load(std::memory_order_acquire);
  if (existing != nullptr) return *existing;
  auto fresh = std::make_unique<NodeHooks>();
  if (hooks_.compare_exchange_strong(existing, fresh.get(), std::memory_order_acq_rel)) {
    return *fresh.release();
  }
  return *existing;  // another thread made them first
}

RemovableHandle Node::register_prehook(PreHook hook) {
  AG_CHECK(hook != nullptr, "register_prehook: the hook on '", name(), "' is empty");
  return {weak_from_this(), hooks().add_pre_hook(std::move(hook))};
}

RemovableHandle Node::register_hook(PostHook hook) {
  AG_CHECK(hook != nullptr, "register_hook: the hook on '", name(), "' is empty");
  return {weak_from_this(), hooks().add_post_hook(std::move(hook))};
}

void RemovableHandle::remove() const {
  if (id_ == 0) return;
  if (std::shared_ptr<Node> node = node_.lock()) node->hooks().remove(id_);
}

RemovableHandle Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  AG_CHECK(defined(), "register_hook: the tensor is undefined");
  AG_CHECK(hook != nullptr, "register_hook: the hook is empty");
  AG_CHECK(requires_grad(),
           "register_hook: cannot register a hook on a tensor that doesn't "
           "require gradient (",
           describe(), ")");
  auto [node, slot] = hook_site(*this);
  if (node == nullptr) return {};
  const uint64_t id = node->hooks().add_tensor_hook(slot, std::move(hook));
  return {node, id};
}

void Tensor::retain_grad() const {
  AG_CHECK(defined(), "retain_grad: the tensor is undefined");
  AG_CHECK(requires_grad(),
           "retain_grad: can't retain_grad on Tensor that has requires_grad=False (", describe(),
           ")");
  // A tensor that retains grad already: a no-op, as in PyTorch, which tests that before it reads
  // the history, so a stale view that would refuse to regenerate it (a split output whose base
  // was written since) does not raise here.
  {
    std::lock_guard<std::mutex> lock(impl_->autograd_mutex);
    if (impl_->retains_grad) return;
  }
  // A leaf keeps its .grad anyway: a no-op, as in PyTorch, whose leaf test (VariableHooks::
  // is_leaf) reads the history as it stands: a view made under no_grad, whose base was written
  // since, is a leaf here and does not raise (its grad_fn would).
  if (history_as_it_stands() == nullptr) return;
  const std::shared_ptr<Node> fn = grad_fn();
  {
    std::lock_guard<std::mutex> lock(impl_->autograd_mutex);
    if (impl_->retains_grad) return;
    impl_->retains_grad = true;
  }
  fn->hooks().add_retains_grad(output_nr(), std::make_shared<RetainedTensor>(impl_.get()));
}

bool Tensor::retains_grad() const {
  std::lock_guard<std::mutex> lock(impl_->autograd_mutex);
  return impl_->retains_grad;
}

RemovableHandle Tensor::register_post_accumulate_grad_hook(
    std::function<void(const Tensor&)> hook) const {
  AG_CHECK(defined(), "register_post_accumulate_grad_hook: the tensor is undefined");
  AG_CHECK(hook != nullptr, "register_post_accumulate_grad_hook: the hook is empty");
  AG_CHECK(requires_grad(),
           "register_post_accumulate_grad_hook: cannot register a hook on a "
           "tensor that doesn't require gradient (",
           describe(), ")");
  AG_CHECK(grad_fn() == nullptr,
           "register_post_accumulate_grad_hook: post accumulate grad hooks "
           "cannot be registered on non-leaf tensors (this one has grad_fn '",
           grad_fn()->name(), "')");
  if (!impl_->requires_grad) return {};  // a view that requires grad only through its base
  std::shared_ptr<AccumulateGrad> node = grad_accumulator(*this);
  impl_.mark_upgradable();  // the hooks are handed the leaf through its node's plain pointer
  const uint64_t id = node->hooks().add_post_accumulate_hook(std::move(hook));
  return {node, id};
}

namespace {

// The old nodes of the tensors that were detached in place while they retained grad (few): where
// their hooks are (keep_retains_grad_on_old_node).
struct DetachedRetainers {
  std::mutex mutex;
  std::unordered_map<const TensorImpl*, std::weak_ptr<Node>> old_node;
};

DetachedRetainers& detached_retainers() {
  static DetachedRetainers* const retainers = new DetachedRetainers;  // never destroyed
  return *retainers;
}

// Takes out the retains-grad link of `t` from the node it was detached from, if any.
std::shared_ptr<RetainedTensor> take_detached_retains_grad(const TensorImpl* t) {
  std::shared_ptr<Node> node;
  {
    DetachedRetainers& retainers = detached_retainers();
    std::lock_guard<std::mutex> lock(retainers.mutex);
    const auto it = retainers.old_node.find(t);
    if (it == retainers.old_node.end()) return nullptr;
    node = it->second.lock();
    retainers.old_node.erase(it);
  }
  return node != nullptr ? node->hooks().take_retains_grad(t) : nullptr;
}

}  // namespace

void keep_retains_grad_on_old_node(const TensorImpl& t, const std::shared_ptr<Node>& old_fn) {
  DetachedRetainers& retainers = detached_retainers();
  std::lock_guard<std::mutex> lock(retainers.mutex);
  retainers.old_node[&t] = old_fn;
}

void TensorImpl::forget_retains_grad() {
  std::shared_ptr<RetainedTensor> link =
      grad_fn != nullptr ? grad_fn->hooks().take_retains_grad(this) : nullptr;
  if (link == nullptr) link = take_detached_retains_grad(this);
  if (link == nullptr) return;
  // Waits for a retains-grad hook writing .grad right now (RetainedTensor).
  std::lock_guard<std::mutex> lock(link->mutex);
  link->tensor = nullptr;
}

void move_retains_grad(TensorImpl& t, const std::shared_ptr<Node>& old_fn) {
  std::shared_ptr<RetainedTensor> link =
      old_fn != nullptr ? old_fn->hooks().take_retains_grad(&t) : nullptr;
  if (link == nullptr) return;
  if (t.grad_fn != nullptr) {
    t.grad_fn->hooks().add_retains_grad(t.output_nr, std::move(link));
    return;
  }
  std::lock_guard<std::mutex> lock(link->mutex);  // no history left to retain a gradient from
  link->tensor = nullptr;
  t.retains_grad = false;
}

// The calls the engine makes (Note [Hooks], the order).

void call_tensor_hooks(const Node& node, TensorList& grads) {
  const std::shared_ptr<const NodeHooks::Table> tensor_hooks = table_of(node);  // 1
  for (const NodeHooks::TensorHooks& group : tensor_hooks->tensor) {
    Tensor& grad = grads[group.slot];
    for (size_t i = 0; i < group.hooks.size(); ++i) {
      Tensor result = group.hooks[i].second(grad);
      if (!result.defined()) continue;  // keep
      check_replacement(grad, result, tensor_hook_name(node, group.slot, i));
      grad = std::move(result);
    }
  }
  const std::shared_ptr<const NodeHooks::Table> retains = table_of(node);  // 2
  for (const auto& [slot, retained] : retains->retains_grad) {
    const Tensor& grad = grads[slot];
    if (!grad.defined()) continue;
    std::lock_guard<std::mutex> lock(retained->mutex);
    if (retained->tensor != nullptr) accumulate_into_interior_grad(*retained->tensor, grad);
  }
}

void call_pre_hooks(const Node& node, TensorList& grads) {
  const std::shared_ptr<const NodeHooks::Table> table = table_of(node);
  for (size_t i = 0; i < table->pre.size(); ++i) {
    replace_all(grads, table->pre[i].second(grads), node_hook_name("pre-hook", node, i));
  }
}

bool has_post_hooks(const Node& node) { return !table_of(node)->post.empty(); }

void call_post_accumulate_grad_hooks(Node& node) {
  const std::shared_ptr<const NodeHooks::Table> table = table_of(node);
  if (table->post_accumulate.empty()) return;
  const Tensor leaf = static_cast<AccumulateGrad&>(node).variable_if_alive();
  if (!leaf.defined()) return;  // it died, and its .grad with it
  for (const auto& entry : table->post_accumulate) entry.second(leaf);
}

void call_post_hooks(const Node& node, TensorList& grad_inputs, const TensorList& grad_outputs) {
  const std::shared_ptr<const NodeHooks::Table> table = table_of(node);
  for (size_t i = 0; i < table->post.size(); ++i) {
    replace_all(grad_inputs, table->post[i].second(grad_inputs, grad_outputs),
                node_hook_name("post-hook", node, i));
  }
}

HookWants gradients_hooks_want(const Node& node, std::vector<char>* slots) {
  const NodeHooks* hooks = node.hooks_if_any();
  if (hooks == nullptr) return HookWants::kNone;
  const std::shared_ptr<const NodeHooks::Table> table = hooks->table();
  for (const NodeHooks::TensorHooks& group : table->tensor) {
    if (!group.hooks.empty()) return HookWants::kAll;
  }
  if (!table->pre.empty() || !table->post.empty() || !table->post_accumulate.empty()) {
    return HookWants::kAll;
  }
  bool any = false;
  slots->assign(node.num_inputs(), 0);
  for (const auto& [slot, retained] : table->retains_grad) {
    std::lock_guard<std::mutex> lock(retained->mutex);  // the tensor cannot die meanwhile
    const TensorImpl* t = retained->tensor;
    if (t == nullptr) continue;
    (*slots)[slot] = 1;
    any = true;
  }
  return any ? HookWants::kSlots : HookWants::kNone;
}

HookCounts count_hooks(const Node& node) {
  HookCounts counts;
  const NodeHooks* hooks = node.hooks_if_any();
  if (hooks == nullptr) return counts;
  const std::shared_ptr<const NodeHooks::Table> table = hooks->table();
  for (const NodeHooks::TensorHooks& group : table->tensor) counts.tensor += group.hooks.size();
  counts.retains_grad = table->retains_grad.size();
  counts.pre = table->pre.size();
  counts.post = table->post.size();
  counts.post_accumulate = table->post_accumulate.size();
  return counts;
}

}  // namespace ag
