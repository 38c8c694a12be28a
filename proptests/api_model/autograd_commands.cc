// Commands that drive autograd: requires_grad, .grad, backward() and grad().
#include <optional>
#include <set>

#include "engine/autograd.h"
#include "engine/grad_mode.h"
#include "engine/node.h"
#include "ops/ops.h"
#include "proptests/api_model/command_gens.h"
#include "proptests/api_model/command_util.h"

namespace ag::proptests {
namespace {

// A handle the generator's pick() may return (Note [Model view kinds]): shrinking may leave a
// command naming another tensor than the one it was made for.
bool pickable(const Model& m, int n) {
  return m.has(n) && !m.unreadable(m.impl_of(n)) && !m.edgeless(m.impl_of(n));
}

class SetRequiresGrad final : public ApiCommand {
 public:
  SetRequiresGrad(int x, bool flag) : x_(x), flag_(flag) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE(m.has(x_));
    // A view's requires_grad follows its base, so neither may be toggled (PyTorch and the engine
    // allow it, with effects on the view that the model does not follow).
    RC_PRE((!m.is_view(m.impl_of(x_)) && !m.has_views(m.impl_of(x_))));
    // A leaf is saved as itself: once it requires grad, a create_graph gradient that reads it
    // depends on it, though the op that saved it recorded no edge to it. The model's values do
    // not follow that dependence (README.md).
    RC_PRE((!flag_ || !m.saved_while_not_requiring_grad(m.impl_of(x_))));
  }
  Outcome step(Model& m) const override { return m.set_requires_grad(x_, flag_); }
  void exec(Sut& sut, const Model&) const override { sut.tensors.at(x_).set_requires_grad(flag_); }
  std::string text() const override {
    return tname(x_) + ".requires_grad_(" + (flag_ ? "True" : "False") + ")";
  }

 private:
  int x_;
  bool flag_;
};

class RetainGrad final : public ApiCommand {
 public:
  explicit RetainGrad(int x) : x_(x) {}
  void checkPreconditions(const Model& m) const override { RC_PRE(m.has(x_)); }
  Outcome step(Model& m) const override { return m.retain_grad(x_); }
  void exec(Sut& sut, const Model&) const override { sut.tensors.at(x_).retain_grad(); }
  std::string text() const override { return tname(x_) + ".retain_grad()"; }

 private:
  int x_;
};

// Note [Model hooks]: the hook logs what it is handed and returns it times its factor (or
// nothing: keep).
class RegisterHook final : public ApiCommand {
 public:
  RegisterHook(int id, int x, double factor) : id_(id), x_(x), factor_(factor) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE((m.has(x_) && id_ >= m.next_hook()));
  }
  Outcome step(Model& m) const override { return m.register_hook(id_, x_, factor_); }
  void exec(Sut& sut, const Model&) const override {
    auto log = sut.hook_log;
    const int id = id_;
    const double f = factor_;
    sut.hook_handles[id] = sut.tensors.at(x_).register_hook([log, id, f](const Tensor& g) {
      log->push_back({id, {hook_value(g)}});
      return !g.defined() || f == 1.0 ? Tensor() : ops::mul(g, f);
    });
  }
  std::string text() const override {
    return "h" + std::to_string(id_) + " = " + tname(x_) + ".register_hook(hook(" +
           std::to_string(id_) + ", " + (factor_ == 1.0 ? "None" : num(factor_)) + "))";
  }

 private:
  int id_, x_;
  double factor_;
};

// Note [Model node hooks]: t.grad_fn.register_prehook(fn) or register_hook(fn); fn logs what it
// is handed and returns it (grad_outputs, or grad_inputs) times its factor, or nothing.
class RegisterNodeHook final : public ApiCommand {
 public:
  RegisterNodeHook(int id, int x, HookKind kind, double factor)
      : id_(id), x_(x), kind_(kind), factor_(factor) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE((m.has(x_) && id_ >= m.next_hook() && m.node_hooks_allowed(m.impl_of(x_))));
  }
  Outcome step(Model& m) const override { return m.register_node_hook(id_, x_, kind_, factor_); }
  void exec(Sut& sut, const Model&) const override {
    auto log = sut.hook_log;
    const int id = id_;
    const double f = factor_;
    auto scaled = [f](const TensorList& ts) {
      TensorList out;
      if (f == 1.0) return out;  // keep them
      for (const Tensor& t : ts) out.push_back(t.defined() ? ops::mul(t, f) : Tensor());
      return out;
    };
    const std::shared_ptr<ag::Node> fn = sut.tensors.at(x_).grad_fn();
    if (kind_ == HookKind::kPre) {
      sut.hook_handles[id] = fn->register_prehook([log, id, scaled](const TensorList& gos) {
        log->push_back({id, hook_values(gos)});
        return scaled(gos);
      });
      return;
    }
    sut.hook_handles[id] =
        fn->register_hook([log, id, scaled](const TensorList& gis, const TensorList& gos) {
          std::vector<HookValue> values = hook_values(gis);
          for (HookValue& v : hook_values(gos)) values.push_back(std::move(v));
          log->push_back({id, std::move(values)});
          return scaled(gis);
        });
  }
  std::string text() const override {
    const bool pre = kind_ == HookKind::kPre;
    return "h" + std::to_string(id_) + " = " + tname(x_) + ".grad_fn." +
           (pre ? "register_prehook(prehook(" : "register_hook(posthook(") + std::to_string(id_) +
           ", " + (factor_ == 1.0 ? "None" : num(factor_)) + "))";
  }

 private:
  int id_, x_;
  HookKind kind_;
  double factor_;
};

// t.register_post_accumulate_grad_hook(fn): fn logs the leaf's .grad.
class RegisterPostAccumulateHook final : public ApiCommand {
 public:
  RegisterPostAccumulateHook(int id, int x) : id_(id), x_(x) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE((pickable(m, x_) && id_ >= m.next_hook()));
  }
  Outcome step(Model& m) const override { return m.register_post_accumulate_grad_hook(id_, x_); }
  void exec(Sut& sut, const Model&) const override {
    auto log = sut.hook_log;
    const int id = id_;
    sut.hook_handles[id] =
        sut.tensors.at(x_).register_post_accumulate_grad_hook([log, id](const Tensor& leaf) {
          log->push_back({id, {hook_value(leaf.grad())}});
        });
  }
  std::string text() const override {
    return "h" + std::to_string(id_) + " = " + tname(x_) +
           ".register_post_accumulate_grad_hook(acchook(" + std::to_string(id_) + "))";
  }

 private:
  int id_, x_;
};

class RemoveHook final : public ApiCommand {
 public:
  explicit RemoveHook(int id) : id_(id) {}
  void checkPreconditions(const Model& m) const override { RC_PRE(m.hooks().count(id_) > 0); }
  Outcome step(Model& m) const override { return m.remove_hook(id_); }
  void exec(Sut& sut, const Model&) const override { sut.hook_handles.at(id_).remove(); }
  std::string text() const override { return "h" + std::to_string(id_) + ".remove()"; }

 private:
  int id_;
};

class SetGrad final : public ApiCommand {
 public:
  SetGrad(int x, int value) : x_(x), value_(value) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE((m.has(x_) && (value_ < 0 || m.has(value_))));
    // Backward adds into .grad in place, through its strides, which the model must know; into
    // an expanded one PyTorch's addition raises mid-call.
    if (value_ >= 0) {
      const int v = m.impl_of(value_);
      RC_PRE((m.impl(v).layout_known && !has_internal_overlap(m.layout(v))));
    }
  }
  Outcome step(Model& m) const override { return m.set_grad(x_, value_); }
  void exec(Sut& sut, const Model&) const override {
    sut.tensors.at(x_).set_grad(value_ < 0 ? Tensor() : sut.tensors.at(value_));
  }
  std::string text() const override { return tname(x_) + ".grad = " + tname(value_); }

 private:
  int x_, value_;
};

class TakeGrad final : public ApiCommand {
 public:
  TakeGrad(int name, int of) : name_(name), of_(of) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE((fresh(m, name_) && m.has(of_)));
    const int g = m.impl(m.impl_of(of_)).grad;
    RC_PRE((g >= 0 && !m.impl(g).dead));
  }
  Outcome step(Model& m) const override { return m.take_grad(name_, of_); }
  void exec(Sut& sut, const Model&) const override {
    sut.tensors[name_] = sut.tensors.at(of_).grad();
  }
  std::string text() const override { return tname(name_) + " = " + tname(of_) + ".grad"; }

 private:
  int name_, of_;
};

TensorList tensors(const Sut& sut, const std::vector<int>& names) {
  TensorList out;
  for (int n : names) out.push_back(n < 0 ? Tensor() : sut.tensors.at(n));
  return out;
}

std::string retain_str(int retain) { return retain < 0 ? "None" : retain ? "True" : "False"; }

void check_args(const Model& m, const CallArgs& a) {
  RC_PRE(!a.roots.empty());
  for (int n : a.roots) RC_PRE(pickable(m, n));
  for (int n : a.grad_tensors) RC_PRE((n < 0 || pickable(m, n)));
  for (int n : a.inputs) RC_PRE(pickable(m, n));
  // The model predicts histories of second derivatives, not third ones.
  RC_PRE((!a.create_graph || !m.reaches_grad_node(a.roots)));
  // Note [Model saved-tensor hooks]: no create_graph call inside a scope or through a node whose
  // saved values unpack scaled, and no in-place accumulation into a .grad a pack kept.
  RC_PRE((!a.create_graph || (m.innermost_saved_hooks() < 0 && !m.reaches_scaled_unpack(a.roots))));
  RC_PRE(!m.grad_kept_by_pack());
}

class Backward final : public ApiCommand {
 public:
  explicit Backward(CallArgs args) : args_(std::move(args)) {}
  void checkPreconditions(const Model& m) const override { check_args(m, args_); }
  Outcome step(Model& m) const override { return m.backward(args_); }
  void exec(Sut& sut, const Model&) const override {
    BackwardArgs args;
    args.grad_tensors(tensors(sut, args_.grad_tensors))
        .inputs(tensors(sut, args_.inputs))
        .create_graph(args_.create_graph);
    if (args_.retain_graph >= 0) args.retain_graph(args_.retain_graph == 1);
    backward(tensors(sut, args_.roots), args);
  }
  std::string text() const override {
    std::string s = "torch.autograd.backward(" + tlist(args_.roots);
    if (!args_.grad_tensors.empty()) s += ", grad_tensors=" + tlist(args_.grad_tensors);
    if (args_.retain_graph >= 0) s += ", retain_graph=" + retain_str(args_.retain_graph);
    if (args_.create_graph) s += ", create_graph=True";
    if (!args_.inputs.empty()) s += ", inputs=" + tlist(args_.inputs);
    return s + ")";
  }

 private:
  CallArgs args_;
};

class Grad final : public ApiCommand {
 public:
  Grad(CallArgs args, int first_name) : args_(std::move(args)), first_(first_name) {}
  std::vector<int> results() const {
    std::vector<int> out;
    for (size_t k = 0; k < args_.inputs.size(); ++k) out.push_back(first_ + static_cast<int>(k));
    return out;
  }
  void checkPreconditions(const Model& m) const override {
    check_args(m, args_);
    RC_PRE(!args_.inputs.empty());
    for (int n : results()) RC_PRE(fresh(m, n));
  }
  Outcome step(Model& m) const override { return m.grad(args_, results()); }
  void exec(Sut& sut, const Model& after) const override {
    GradArgs args;
    args.grad_outputs(tensors(sut, args_.grad_tensors))
        .create_graph(args_.create_graph)
        .allow_unused(args_.allow_unused);
    if (args_.retain_graph >= 0) args.retain_graph(args_.retain_graph == 1);
    TensorList got = grad(tensors(sut, args_.roots), tensors(sut, args_.inputs), args);
    // Gradients for different inputs may be one object or share memory (PyTorch's do: a view's
    // and its base's, a passed-through buffer), and one tensor named twice may get two objects;
    // none of that is part of the contract, so the runner makes it one object per input tensor.
    // Like PyTorch, the engine returns a grad_outputs tensor itself where the gradient passes
    // through unchanged; the model (and the contract) expects a new tensor, with the
    // same history under create_graph and none otherwise (README.md). So is a result that a view
    // op in backward made, a view of a buffer (as model_vs_pytorch.cc does): made under no_grad,
    // PyTorch and the engine refuse recorded in-place ops on it (Note [View flags follow the base]
    // in ops/views.h), which the model does not follow. The copy keeps the result's tangent.
    const TensorList gos = tensors(sut, args_.grad_tensors);
    for (Tensor& g : got) {
      bool copy = g.defined() && g.impl()->view_base;
      for (const Tensor& go : gos) {
        copy = copy || (g.defined() && go.defined() && g.shares_storage_with(go));
      }
      if (copy && args_.create_graph) g = ops::clone(g);
      if (copy && !args_.create_graph) {  // a copy without history, with g's tangent
        GradModeGuard no_grad(false);
        g = ops::clone(g);
      }
    }
    const TensorList inputs = tensors(sut, args_.inputs);
    for (size_t k = 0; k < got.size(); ++k) {
      if (!got[k].defined()) continue;
      size_t j = 0;
      while (j < k && !inputs[j].is_same(inputs[k])) ++j;
      if (j < k) {
        got[k] = got[j];
        continue;
      }
      for (j = 0; j < k; ++j) {
        if (got[j].defined() && got[j].shares_storage_with(got[k])) {
          got[k] = ops::clone(got[k]);
          break;
        }
      }
    }
    sut.returned = got;
    const std::vector<int> names = results();
    for (size_t k = 0; k < got.size() && k < names.size(); ++k) {
      if (after.handles().count(names[k])) sut.tensors[names[k]] = got[k];
    }
  }
  void verify(const Outcome& expected, const Sut& sut) const override {
    const TensorList& got = sut.returned;
    RC_ASSERT(got.size() == expected.grads.size());
    for (size_t k = 0; k < got.size(); ++k) {
      const ExpectedGrad& e = expected.grads[k];
      const std::string who = "result " + std::to_string(k) + " of " + text();
      if (!e.defined) {
        if (got[k].defined()) {
          RC_FAIL(who + " is defined; PyTorch returns None (input not reached, allow_unused)");
        }
        continue;
      }
      if (!got[k].defined()) RC_FAIL(who + " is undefined; the model has a gradient");
      // Also checked with the rest of the state, unless the model cannot follow it further.
      const std::vector<double> v = got[k].to_vector();
      for (size_t i = 0; i < e.value.size(); ++i) {
        if (i >= v.size() || !close(v[i], e.value[i])) {
          RC_FAIL(who + " element " + std::to_string(i) + " is " +
                  (i < v.size() ? std::to_string(v[i]) : "missing") + ", model " +
                  std::to_string(e.value[i]));
        }
      }
      if (got[k].requires_grad() != e.requires_grad) {
        RC_FAIL(who + (e.requires_grad ? " does not require grad" : " requires grad") +
                "; the model says the opposite");
      }
    }
  }
  std::string text() const override {
    std::string lhs;
    for (int n : results()) lhs += tname(n) + ", ";
    std::string s =
        lhs + "= torch.autograd.grad(" + tlist(args_.roots) + ", " + tlist(args_.inputs);
    if (!args_.grad_tensors.empty()) s += ", grad_outputs=" + tlist(args_.grad_tensors);
    if (args_.retain_graph >= 0) s += ", retain_graph=" + retain_str(args_.retain_graph);
    if (args_.create_graph) s += ", create_graph=True";
    if (args_.allow_unused) s += ", allow_unused=True";
    return s + ")";
  }

 private:
  CallArgs args_;
  int first_;
};

// The edges a backward from these roots can reach (a stale view's regenerated history aside).
std::set<Ref> edges_reached(const Model& m, const std::vector<int>& roots) {
  std::set<Ref> out;
  std::vector<int> todo;
  for (int r : roots) {
    const Ref e = m.impl(m.impl_of(r)).grad_fn;
    if (e.node >= 0 && out.insert(e).second) todo.push_back(e.node);
  }
  while (!todo.empty()) {
    const int n = todo.back();
    todo.pop_back();
    for (const auto& [i, e] : m.program().edges(n)) {
      if (out.insert(e).second) todo.push_back(e.node);
    }
  }
  return out;
}

// Roots, grad_tensors, inputs and flags for backward()/grad().
std::optional<CallArgs> gen_args(const Model& m, bool for_grad) {
  CallArgs a;
  auto rg = [&](int n) { return m.requires_grad(m.impl_of(n)); };
  auto scalar_rg = [&](int n) { return rg(n) && count(m.shape(n)) == 1; };
  // Inside a dual level, often a dual root or grad_output: forward over reverse (Note [Tangents
  // of gradients], program.h).
  auto dual = [&](int n) { return m.dual_live() && m.tangent_kind(n) == Tangent::kKnown; };
  const int roots = *rc::gen::weightedElement<int>({{4, 1}, {1, 2}});
  for (int r = 0; r < roots; ++r) {
    int root = -1;
    switch (*rc::gen::weightedElement<int>({{6, 0}, {4, 1}, {3, 2}, {m.dual_live() ? 6 : 0, 3}})) {
      case 0:
        root = pick(m, scalar_rg);
        break;
      case 1:  // so that a tensor retaining grad, or a hook, gets one
        root = pick(m, [&](int n) { return scalar_rg(n) && m.reaches_retained(n); });
        if (root < 0) root = pick(m, [&](int n) { return rg(n) && m.reaches_retained(n); });
        break;
      case 2:
        root = *rc::gen::inRange(0, 20) > 0 ? pick(m, rg) : pick_any(m);
        break;
      default:
        root = pick(m, [&](int n) { return scalar_rg(n) && dual(n); });
        if (root < 0) root = pick(m, [&](int n) { return rg(n) && dual(n); });
        break;
    }
    if (root < 0) root = pick(m, rg);
    if (root < 0) return std::nullopt;
    a.roots.push_back(root);
  }
  if (*rc::gen::weightedElement<int>({{1, 0}, {1, 1}})) {
    for (int root : a.roots) {
      const Dims& s = m.shape(root);
      int g = -1;
      if (count(s) != 1 || *rc::gen::arbitrary<bool>()) {
        if (m.dual_live() && *rc::gen::arbitrary<bool>()) {
          g = pick(m, [&](int n) { return m.shape(n) == s && dual(n); });
        }
        if (g < 0) {
          g = *rc::gen::inRange(0, 20) > 0 ? pick(m, [&](int n) { return m.shape(n) == s; })
                                           : pick_any(m);
        }
      }
      a.grad_tensors.push_back(g);
    }
  }
  // Inside a dual level, often tensors the roots' graph reaches (their gradients may then
  // carry tangents).
  std::set<Ref> reached;
  if (m.dual_live() && *rc::gen::arbitrary<bool>()) reached = edges_reached(m, a.roots);
  auto on_graph = [&](int n) {
    const ImplState& t = m.impl(m.impl_of(n));
    const Ref e = t.grad_fn.node >= 0 ? t.grad_fn : Ref{t.accumulator, 0};
    return rg(n) && e.node >= 0 && reached.count(e) > 0;
  };
  const int inputs = for_grad ? *rc::gen::inRange(1, 4)
                              : *rc::gen::weightedElement<int>({{4, 0}, {2, 1}, {2, 2}, {1, 3}});
  for (int i = 0; i < inputs; ++i) {
    int x = reached.empty() ? -1 : pick(m, on_graph);
    if (x < 0) x = *rc::gen::inRange(0, 20) > 0 ? pick(m, rg) : pick_any(m);
    if (x < 0) return std::nullopt;
    a.inputs.push_back(x);
  }
  a.retain_graph = *rc::gen::weightedElement<int>({{2, -1}, {1, 0}, {2, 1}});
  a.create_graph = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
  if (a.create_graph && m.reaches_grad_node(a.roots)) a.create_graph = false;
  a.allow_unused = for_grad && *rc::gen::arbitrary<bool>();
  return a;
}

}  // namespace

CommandPtr make_set_requires_grad(const Model& m) {
  auto allowed = [&](int n) { return !m.is_view(m.impl_of(n)) && !m.has_views(m.impl_of(n)); };
  // Mostly a leaf some graph already uses: turning it off (or moving it into the graph's
  // interior next) is what AccumulateGrad must notice.
  int x = -1;
  if (*rc::gen::weightedElement<int>({{2, 0}, {1, 1}}) == 0) {
    x = pick(m, [&](int n) { return allowed(n) && m.impl(m.impl_of(n)).accumulator >= 0; });
  }
  if (x < 0) x = pick(m, allowed);
  if (x < 0) return nullptr;
  return std::make_shared<SetRequiresGrad>(x, *rc::gen::arbitrary<bool>());
}

CommandPtr make_retain_grad(const Model& m) {
  auto rg = [&](int n) { return m.requires_grad(m.impl_of(n)); };
  auto non_leaf = [&](int n) { return rg(n) && !m.is_leaf(m.impl_of(n)); };
  auto view = [&](int n) { return m.is_view(m.impl_of(n)); };
  std::set<Ref> used;  // edges some op's history goes through: a later backward may reach them
  for (int n = 0; n < m.program().size(); ++n) {
    for (const auto& [i, e] : m.program().edges(n)) used.insert(e);
  }
  // Mostly a non-leaf that an op used (a view's history moves when its base is written);
  // sometimes a leaf (a no-op) or a tensor that does not require grad (an error).
  int x = -1;
  switch (*rc::gen::weightedElement<int>({{6, 0}, {2, 1}, {2, 2}, {1, 3}})) {
    case 0:
      x = pick(m, [&](int n) { return non_leaf(n) && used.count(m.impl(m.impl_of(n)).grad_fn); });
      if (x < 0) x = pick(m, non_leaf);
      break;
    case 1:
      x = pick(m, view);
      break;
    case 2:
      x = pick(m, rg);
      break;
    default:
      break;
  }
  if (x < 0) x = pick_any(m);
  if (x < 0) return nullptr;
  return std::make_shared<RetainGrad>(x);
}

CommandPtr make_register_hook(const Model& m) {
  if (!m.hooks().empty() && *rc::gen::inRange(0, 4) == 0) {
    std::vector<int> ids;
    for (const auto& [id, h] : m.hooks()) ids.push_back(id);
    return std::make_shared<RemoveHook>(*rc::gen::elementOf(ids));
  }
  auto rg = [&](int n) { return m.requires_grad(m.impl_of(n)); };
  auto non_leaf = [&](int n) { return rg(n) && !m.is_leaf(m.impl_of(n)); };
  int x = -1;
  switch (*rc::gen::weightedElement<int>({{6, 0}, {2, 1}, {3, 2}, {1, 3}})) {
    case 0:
      x = pick(m, non_leaf);
      break;
    case 1:
      x = pick(m, [&](int n) { return rg(n) && m.is_view(m.impl_of(n)); });
      break;
    case 2:
      x = pick(m, rg);  // leaves too
      break;
    default:
      break;
  }
  if (x < 0) x = pick_any(m);
  if (x < 0) return nullptr;
  return std::make_shared<RegisterHook>(m.next_hook(), x, *rc::gen::element(1.0, 2.0, -0.5));
}

CommandPtr make_node_hook(const Model& m) {
  auto rg = [&](int n) { return m.requires_grad(m.impl_of(n)); };
  if (*rc::gen::inRange(0, 3) == 0) {  // post-accumulate-grad: mostly a leaf that requires grad
    int x = -1;
    if (*rc::gen::inRange(0, 8) > 0) {
      x = pick(m, [&](int n) { return rg(n) && m.is_leaf(m.impl_of(n)); });
    }
    if (x < 0) x = pick_any(m);
    if (x < 0) return nullptr;
    return std::make_shared<RegisterPostAccumulateHook>(m.next_hook(), x);
  }
  const int x = pick(m, [&](int n) { return m.node_hooks_allowed(m.impl_of(n)); });
  if (x < 0) return nullptr;
  const HookKind kind = *rc::gen::element(HookKind::kPre, HookKind::kPost);
  return std::make_shared<RegisterNodeHook>(m.next_hook(), x, kind,
                                            *rc::gen::element(1.0, 2.0, -0.5));
}

CommandPtr make_set_grad(const Model& m) {
  const int x = pick_any(m);
  if (x < 0) return nullptr;
  int value = -1;
  if (*rc::gen::arbitrary<bool>()) {  // zero it or hand it a tensor of the caller's
    value = *rc::gen::inRange(0, 20) > 0 ? pick(m, [&](int n) { return m.shape(n) == m.shape(x); })
                                         : pick_any(m);
  }
  return std::make_shared<SetGrad>(x, value);
}

CommandPtr make_take_grad(const Model& m) {
  const int x = pick(m, [&](int n) {
    const int g = m.impl(m.impl_of(n)).grad;
    return g >= 0 && !m.impl(g).dead;
  });
  if (x < 0) return nullptr;
  return std::make_shared<TakeGrad>(m.next_name(), x);
}

CommandPtr make_backward(const Model& m) {
  std::optional<CallArgs> a = gen_args(m, false);
  if (!a) return nullptr;
  return std::make_shared<Backward>(std::move(*a));
}

CommandPtr make_grad(const Model& m) {
  std::optional<CallArgs> a = gen_args(m, true);
  if (!a) return nullptr;
  return std::make_shared<Grad>(std::move(*a), m.next_name());
}

}  // namespace ag::proptests
