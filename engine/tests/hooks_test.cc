// Hooks, pinned to PyTorch 2.15 (Note [Hooks], engine/hooks.h). Each case's expected events and
// values are the line of the same name that engine/tests/hooks_goldens.py prints: the hooks in
// the order they ran, a tensor as its values ("[6, 16]"), an absent gradient as None, a node
// hook's list of gradients in parentheses.
#include "engine/hooks.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/function.h"
#include "engine/grad_mode.h"
#include "engine/memory/allocator.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_error;
using testing::fmt;
using testing::leaf;
using testing::values;

std::string fmt(const TensorList& ts) {
  std::string s = "(";
  for (const Tensor& t : ts) s += (s.size() > 1 ? ", " : "") + fmt(t);
  return s + ")";
}

// The events of one case, in order.
class Log {
 public:
  void add(std::string event) { events_.push_back(std::move(event)); }
  // The events so far, joined with "; ", and a fresh log.
  std::string take() {
    std::string s;
    for (const std::string& e : events_) s += (s.empty() ? "" : "; ") + e;
    events_.clear();
    return s;
  }
  // A tensor hook that logs "name <gradient>" and returns replace(gradient), or keeps it.
  TensorHook hook(const std::string& name, std::function<Tensor(const Tensor&)> replace = {}) {
    return [this, name, replace](const Tensor& g) {
      add(name + " " + fmt(g));
      return replace ? replace(g) : Tensor();
    };
  }
  Node::PreHook pre(const std::string& name) {
    return [this, name](const TensorList& go) {
      add(name + " " + fmt(go));
      return TensorList();
    };
  }
  Node::PostHook post(const std::string& name) {
    return [this, name](const TensorList& gi, const TensorList& go) {
      add(name + " " + fmt(gi) + " " + fmt(go));
      return TensorList();
    };
  }

 private:
  std::vector<std::string> events_;
};

Tensor times(const Tensor& g, double k) { return ops::mul(g, k); }

// (2 x, 3 x) from one node: hooks on two output slots of one node.
struct Two : Function<Two> {
  static constexpr const char* name = "Two";
  static TensorList forward(ForwardCtx&, const TensorList& in) {
    return {ops::mul(in[0], 2.0), ops::mul(in[0], 3.0)};
  }
  static TensorList backward(BackwardCtx&, const TensorList& g) {
    return {ops::add(ops::mul(g[0], 2.0), ops::mul(g[1], 3.0))};
  }
};

// x * w whose backward gives w no gradient.
struct NoGradForSecond : Function<NoGradForSecond> {
  static constexpr const char* name = "NoGradForSecond";
  static TensorList forward(ForwardCtx&, const TensorList& in) { return {ops::mul(in[0], in[1])}; }
  static TensorList backward(BackwardCtx&, const TensorList& g) { return {g[0], Tensor()}; }
};

TEST(Hooks, OrderOnOneNode) {
  Log log;
  Tensor a = leaf({1, 2}, {2}), b = leaf({3, 4}, {2});
  Tensor y = ops::mul(a, b);
  Tensor z = ops::sum(ops::mul(y, y));
  y.register_hook(log.hook("y1", [](const Tensor& g) { return times(g, 2); }));
  y.retain_grad();
  y.register_hook(log.hook("y2"));
  y.grad_fn()->register_prehook(log.pre("pre"));
  y.grad_fn()->register_hook(log.post("post"));
  a.register_hook(log.hook("a"));
  ScopedHook pacc(a.register_post_accumulate_grad_hook(
      [&](const Tensor& t) { log.add("pacc " + fmt(t.grad())); }));
  backward(z);
  EXPECT_EQ(log.take(),
            "y1 [6, 16]; y2 [12, 32]; pre ([12, 32]); post ([36, 128], [12, 64]) ([12, 32]); "
            "a [36, 128]; pacc [36, 128]");
  EXPECT_EQ(fmt(y.grad()), "[12, 32]");
  EXPECT_EQ(fmt(a.grad()), "[36, 128]");
  EXPECT_EQ(fmt(b.grad()), "[12, 64]");
  EXPECT_TRUE(y.retains_grad());
  EXPECT_FALSE(a.retains_grad());
  a.retain_grad();  // a no-op on a leaf
  EXPECT_FALSE(a.retains_grad());
}

TEST(Hooks, Errors) {
  Tensor c = values({1}, {1});
  Tensor y = ops::mul(leaf({1}, {1}), 2.0);
  expect_error([&] { c.register_hook([](const Tensor& g) { return g; }); },
               {"register_hook",
                "cannot register a hook on a tensor that doesn't require "
                "gradient",
                "float64[1]"});
  expect_error([&] { c.retain_grad(); },
               {"retain_grad", "can't retain_grad on Tensor that has requires_grad=False"});
  expect_error(
      [&] { y.register_post_accumulate_grad_hook([](const Tensor&) {}); },
      {"post accumulate grad hooks cannot be registered on non-leaf tensors", "mul_scalar"});
  expect_error([&] { c.register_post_accumulate_grad_hook([](const Tensor&) {}); },
               {"cannot register a hook on a tensor that doesn't require gradient"});
  expect_error([&] { y.grad_fn()->register_prehook(nullptr); }, {"register_prehook", "empty"});
}

// retain_grad() on a tensor that retains grad already returns before it reads the history, as
// PyTorch's: a chunk output whose base was written since would refuse to regenerate it, and
// does for a chunk output that does not retain grad yet.
TEST(Hooks, RetainGradAgainOnAStaleSplitOutput) {
  Tensor x = leaf({1, 2}, {2});
  std::vector<Tensor> ab = ops::chunk(x, 2);
  Tensor &a = ab[0], &b = ab[1];
  a.retain_grad();
  {
    NoGradGuard no_grad;
    ops::add_(x, values({1, 1}, {2}));
  }
  a.retain_grad();
  EXPECT_TRUE(a.retains_grad());
  expect_error([&] { b.retain_grad(); }, {"is a view and its base", "has been modified"});
}

// grad() runs the hooks of a captured tensor whose node does not run, and returns what they
// left; the retains-grad hook writes y.grad in grad() too; a leaf's AccumulateGrad does not run
// in grad(): no post-accumulate-grad hook.
TEST(Hooks, CaptureHooks) {
  Log log;
  Tensor a = leaf({1, 2}, {2}), b = leaf({3, 4}, {2});
  Tensor y = ops::mul(a, b);
  Tensor z = ops::sum(ops::mul(y, y));
  a.register_hook(log.hook("a", [](const Tensor& g) { return times(g, 10); }));
  y.register_hook(log.hook("y", [](const Tensor& g) { return ops::add(g, 1.0); }));
  ScopedHook pacc(a.register_post_accumulate_grad_hook([&](const Tensor&) { log.add("pacc"); }));
  y.grad_fn()->register_prehook(log.pre("ypre"));
  y.retain_grad();
  Tensor gy = grad({z}, {y}, GradArgs().retain_graph())[0];
  EXPECT_EQ(log.take(), "y [6, 16]");
  EXPECT_EQ(fmt(gy), "[7, 17]");
  EXPECT_EQ(fmt(y.grad()), "[7, 17]");
  Tensor ga = grad({z}, {a}, GradArgs().retain_graph())[0];
  EXPECT_EQ(log.take(), "y [6, 16]; ypre ([7, 17]); a [21, 68]");
  EXPECT_EQ(fmt(ga), "[210, 680]");
  EXPECT_EQ(fmt(y.grad()), "[14, 34]");
  EXPECT_EQ(fmt(a.grad()), "None");
}

// y's node runs (a lies beneath it), so y's gradient is captured before y's hooks run.
TEST(Hooks, CaptureOfANodeThatRuns) {
  Log log;
  Tensor a = leaf({1, 2}, {2}), b = leaf({3, 4}, {2});
  Tensor y = ops::mul(a, b);
  Tensor z = ops::sum(ops::mul(y, y));
  a.register_hook(log.hook("a", [](const Tensor& g) { return times(g, 10); }));
  y.register_hook(log.hook("y", [](const Tensor& g) { return ops::add(g, 1.0); }));
  y.retain_grad();
  TensorList r = grad({z}, {y, a});
  EXPECT_EQ(log.take(), "y [6, 16]; a [21, 68]");
  EXPECT_EQ(fmt(r[0]), "[6, 16]");
  EXPECT_EQ(fmt(r[1]), "[210, 680]");
  EXPECT_EQ(fmt(y.grad()), "[7, 17]");
}

// A hook on an output that got no gradient is handed an undefined one, and so are the node's
// pre- and post-hooks; hook groups run in the order of each output's first hook.
TEST(Hooks, UndefinedGradients) {
  Log log;
  Tensor x = leaf({1, 2}, {2});
  TensorList uv = Two::apply({x});
  const Tensor &u = uv[0], &v = uv[1];
  v.register_hook(log.hook("v1"));
  u.register_hook(log.hook("u1"));
  v.register_hook(log.hook("v2"));
  u.grad_fn()->register_prehook(log.pre("pre"));
  u.grad_fn()->register_hook(log.post("post"));
  backward(ops::sum(ops::mul(u, 3.0)));
  EXPECT_EQ(log.take(),
            "v1 None; v2 None; u1 [3, 3]; pre ([3, 3], None); post ([6, 6]) ([3, 3], None)");
  EXPECT_EQ(fmt(x.grad()), "[6, 6]");
}

// The pass stops; nothing was accumulated; the graph runs again once the hook is removed.
TEST(Hooks, HookThrows) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, 2.0);
  Tensor z = ops::sum(y);
  RemovableHandle h = y.register_hook([](const Tensor&) -> Tensor { throw Error("boom"); });
  expect_error([&] { backward(z, BackwardArgs().retain_graph()); }, {"boom"});
  EXPECT_EQ(fmt(x.grad()), "None");
  h.remove();
  h.remove();  // a second remove does nothing
  backward(z);
  EXPECT_EQ(fmt(x.grad()), "[2, 2]");
}

// .grad is a copy, then old + new (a new tensor each time); grad() writes it too.
TEST(Hooks, RetainsGradAcrossCalls) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, 2.0);
  y.retain_grad();
  Tensor z = ops::sum(ops::mul(y, y));
  backward(z, BackwardArgs().retain_graph());
  Tensor first = y.grad();
  backward(z, BackwardArgs().retain_graph());
  EXPECT_EQ(fmt(y.grad()), "[8, 16]");
  EXPECT_EQ(fmt(first), "[4, 8]");
  grad({z}, {x}, GradArgs().retain_graph());
  EXPECT_EQ(fmt(y.grad()), "[12, 24]");
  grad({z}, {y}, GradArgs().retain_graph());
  EXPECT_EQ(fmt(y.grad()), "[16, 32]");
}

// backward(inputs=[y]) makes y retain grad for good. (PyTorch also runs y's own node there,
// which the engine does not: issue 92331, DEVIATIONS.md `extra-executions`.)
TEST(Hooks, BackwardInputsRetainsGrad) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, 2.0);
  Tensor z = ops::sum(ops::mul(y, y));
  backward(z, BackwardArgs().inputs({y}).retain_graph());
  EXPECT_TRUE(y.retains_grad());
  EXPECT_EQ(fmt(y.grad()), "[4, 8]");
  EXPECT_EQ(fmt(x.grad()), "None");
  backward(z, BackwardArgs().retain_graph());
  EXPECT_EQ(fmt(y.grad()), "[8, 16]");
  EXPECT_EQ(fmt(x.grad()), "[8, 16]");
  grad({z}, {x});
  EXPECT_EQ(fmt(y.grad()), "[12, 24]");
  EXPECT_EQ(fmt(x.grad()), "[8, 16]");
}

TEST(Hooks, ReplacementErrors) {
  Tensor x = leaf({1, 2}, {2});
  Tensor k = values({5, 7}, {2});
  Tensor y = ops::mul(x, k);
  Tensor z = ops::sum(y);
  Node& node = *y.grad_fn();
  const Tensor ones3 = ops::ones({3}, DType::kFloat64);
  auto fails = [&](RemovableHandle h, const std::vector<std::string>& parts) {
    expect_error([&] { backward(z, BackwardArgs().retain_graph()); }, parts);
    h.remove();
  };
  fails(y.register_hook([&](const Tensor&) { return ones3; }),
        {"hook 0 on the gradient of output 0 of 'mul'", "has changed the size of value",
         "float64[2]", "float64[3]"});
  fails(y.register_hook([](const Tensor&) { return ops::ones({2}, DType::kFloat32); }),
        {"hook 0", "has changed the type of value (was float64[2] got float32[2])"});
  fails(node.register_prehook([](const TensorList& go) {
    return TensorList{go[0], go[0]};
  }),
        {"pre-hook 0 of 'mul'",
         "has returned an incorrect number of values (got 2, but "
         "expected 1)"});
  fails(node.register_prehook([&](const TensorList&) { return TensorList{ones3}; }),
        {"pre-hook 0 of 'mul'", "has changed the size of value"});
  fails(
      node.register_hook([](const TensorList& gi, const TensorList&) { return TensorList{gi[0]}; }),
      {"post-hook 0 of 'mul'",
       "has returned an incorrect number of values (got 1, but "
       "expected 2)"});
  fails(node.register_hook([&](const TensorList&, const TensorList&) {
    return TensorList{ones3, Tensor()};
  }),
        {"post-hook 0 of 'mul'", "has changed the size of value"});
  fails(node.register_hook([](const TensorList& gi, const TensorList&) {
    return TensorList{gi[0], gi[0]};
  }),
        {"post-hook 0 of 'mul'", "can't replace a None gradient with a non-None value"});
  EXPECT_EQ(fmt(x.grad()), "None");
  TensorList uv = Two::apply({leaf({1, 2}, {2})});
  uv[1].register_hook([](const Tensor&) { return ops::ones({2}, DType::kFloat64); });
  expect_error([&] { backward(ops::sum(uv[0])); },
               {"hook 0 on the gradient of output 1 of 'Two'",
                "can't replace a None gradient with a non-None value"});
}

// An undefined value in a node hook's result clears that gradient.
TEST(Hooks, NodeHookNoneEntries) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, values({5, 7}, {2}));
  RemovableHandle h =
      y.grad_fn()->register_prehook([](const TensorList&) { return TensorList{Tensor()}; });
  backward(ops::sum(y), BackwardArgs().retain_graph());
  h.remove();
  EXPECT_EQ(fmt(x.grad()), "None");
  y.grad_fn()->register_hook([](const TensorList&, const TensorList&) {
    return TensorList{Tensor(), Tensor()};
  });
  backward(ops::sum(y));
  EXPECT_EQ(fmt(x.grad()), "None");
}

// An in-place op gives y a new node; the old hooks stay on the old one, the retains-grad hook
// moves to the new one.
TEST(Hooks, InPlaceKeepsOldHooks) {
  Log log;
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, 2.0);
  y.register_hook(log.hook("old", [](const Tensor& g) { return times(g, 10); }));
  y.retain_grad();
  ops::mul_(y, values({3, 3}, {2}));
  y.register_hook(log.hook("new", [](const Tensor& g) { return ops::add(g, 1.0); }));
  backward(ops::sum(y));
  EXPECT_EQ(log.take(), "new [1, 1]; old [6, 6]");
  EXPECT_EQ(fmt(y.grad()), "[2, 2]");
  EXPECT_EQ(fmt(x.grad()), "[120, 120]");
}

// The view's node is regenerated after a write to its base; hooks registered before stay on the
// old node, off the path; the retains-grad hook moves.
TEST(Hooks, ViewOfAWrittenBase) {
  Log log;
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor b = ops::mul(x, 1.0);
  Tensor v = ops::slice(b, 0, 1, 3);
  v.register_hook(log.hook("v_before", [](const Tensor& g) { return times(g, 10); }));
  v.retain_grad();
  ops::add_(b, ops::ones({3}, DType::kFloat64));
  v.register_hook(log.hook("v_after"));
  backward(ops::sum(ops::mul(v, v)));
  EXPECT_EQ(log.take(), "v_after [6, 8]");
  EXPECT_EQ(fmt(v.grad()), "[6, 8]");
  EXPECT_EQ(fmt(x.grad()), "[0, 6, 8]");
}

// A write through the view: the base's old node keeps its hook. PyTorch's golden is
// "b0 [2, 16, 24]": its CopySlices runs the in-place op's backward itself and scatters the
// gradient for the view's old value into the base's, so the view's old node is off the path and
// its hook never runs. Here the in-place node's edge goes through the view's old node (Note
// [In-place ops on views]), which runs, and so does its hook, with that same gradient (Note
// [Hooks], the one difference); the values agree.
TEST(Hooks, ViewWrittenInPlace) {
  Log log;
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor b = ops::mul(x, 1.0);
  Tensor v = ops::slice(b, 0, 1, 3);
  v.register_hook(log.hook("v0"));
  b.register_hook(log.hook("b0"));
  v.retain_grad();
  ops::mul_(v, values({2, 2}, {2}));
  v.register_hook(log.hook("v1"));
  backward(ops::sum(ops::mul(b, b)));
  EXPECT_EQ(log.take(), "b0 [2, 16, 24]");
  EXPECT_EQ(fmt(v.grad()), "None");
  EXPECT_EQ(fmt(x.grad()), "[2, 16, 24]");
}

// A scaling hook on a view written in place afterwards: PyTorch's CopySlices never runs it.
TEST(Hooks, ScalingHookOnAViewWrittenInPlace) {
  Log log;
  Tensor x = leaf({1, 1, 1}, {3});
  Tensor b = ops::mul(x, 1.0);
  Tensor v = ops::slice(b, 0, 0, 2);
  v.register_hook(log.hook("v", [](const Tensor& g) { return times(g, 2); }));
  ops::add_(v, values({1, 1}, {2}));
  backward(ops::sum(b));
  EXPECT_EQ(log.take(), "");
  EXPECT_EQ(fmt(x.grad()), "[1, 1, 1]");
}

TEST(Hooks, ViewOfALeaf) {
  Log log;
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor v = ops::slice(x, 0, 1, 3);
  v.register_hook(log.hook("v", [](const Tensor& g) { return times(g, 10); }));
  v.retain_grad();
  backward(ops::sum(ops::mul(v, 2.0)));
  EXPECT_EQ(log.take(), "v [2, 2]");
  EXPECT_EQ(fmt(x.grad()), "[0, 20, 20]");
  EXPECT_EQ(fmt(v.grad()), "[20, 20]");
}

// A view made with grad mode off requires grad only through its base and has no node a gradient
// reaches: a hook registers, and never runs (as in PyTorch).
TEST(Hooks, ViewWithoutHistoryNeverRuns) {
  Log log;
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor v;
  {
    NoGradGuard no_grad;
    v = ops::slice(x, 0, 1, 3);
  }
  ASSERT_TRUE(v.requires_grad());
  RemovableHandle h = v.register_hook(log.hook("v"));
  backward(ops::sum(ops::mul(x, 2.0)));
  EXPECT_EQ(log.take(), "");
  h.remove();
}

// A hook that removes a later one does not stop it this pass; one registered during the pass
// runs from the next.
TEST(Hooks, RemovalDuringAPass) {
  Log log;
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, 2.0);
  Tensor z = ops::sum(y);
  RemovableHandle h2;
  y.register_hook([&](const Tensor&) {
    log.add("h1");
    h2.remove();
    y.register_hook(log.hook("h3"));
    return Tensor();
  });
  h2 = y.register_hook(log.hook("h2"));
  backward(z, BackwardArgs().retain_graph());
  EXPECT_EQ(log.take(), "h1; h2 [1, 1]");
  backward(z);
  EXPECT_EQ(log.take(), "h1; h3 [1, 1]");
}

// backward() still runs the hooks of a leaf that no longer requires grad.
TEST(Hooks, LeafTurnedOff) {
  Log log;
  Tensor x = leaf({1, 2}, {2}), w = leaf({3, 4}, {2});
  Tensor y = ops::sum(ops::mul(x, w));
  x.register_hook(log.hook("x"));
  ScopedHook pacc(x.register_post_accumulate_grad_hook(
      [&](const Tensor& t) { log.add("xpacc " + fmt(t.grad())); }));
  x.set_requires_grad(false);
  backward(y);
  EXPECT_EQ(log.take(), "x [3, 4]; xpacc None");
  EXPECT_EQ(fmt(x.grad()), "None");
  EXPECT_EQ(fmt(w.grad()), "[1, 2]");
}

// A node with hooks wants its gradient though no leaf behind it wants one any more: the per-call
// needs compute it, and y's hook and its retained .grad see it.
TEST(Hooks, RetainedBehindALeafTurnedOff) {
  Log log;
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::sum(x);
  y.retain_grad();
  y.register_hook(log.hook("y"));
  const TensorList uw = Two::apply({y});
  x.set_requires_grad(false);
  backward(uw[1]);
  EXPECT_EQ(log.take(), "y [3]");
  EXPECT_EQ(fmt(y.grad()), "[3]");
}

// w's AccumulateGrad runs with no gradient: its hooks still run.
TEST(Hooks, UndefinedIntoAccumulateGrad) {
  Log log;
  Tensor x = leaf({1, 2}, {2}), w = leaf({3, 4}, {2});
  w.register_hook(log.hook("w"));
  ScopedHook pacc(w.register_post_accumulate_grad_hook(
      [&](const Tensor& t) { log.add("wpacc " + fmt(t.grad())); }));
  backward(ops::sum(NoGradForSecond::apply({x, w})[0]));
  EXPECT_EQ(log.take(), "w None; wpacc None");
  EXPECT_EQ(fmt(x.grad()), "[1, 1]");
  EXPECT_EQ(fmt(w.grad()), "None");
}

// 2 x, logging each call of its backward.
struct Doubled : Function<Doubled> {
  static constexpr const char* name = "Doubled";
  static Log* log;
  static TensorList forward(ForwardCtx&, const TensorList& in) { return {ops::mul(in[0], 2.0)}; }
  static TensorList backward(BackwardCtx&, const TensorList& g) {
    log->add("doubled");
    return {ops::mul(g[0], 2.0)};
  }
};
Log* Doubled::log = nullptr;

// Note [Post-hooks see every executed gradient]: backward() without inputs hands a post-hook every
// gradient its node computes, also one that reaches only a leaf that no longer requires grad, and
// the node that gradient reaches runs (Doubled); with inputs, only those on a path to them.
TEST(Hooks, PostHookBehindALeafTurnedOff) {
  Log log;
  Doubled::log = &log;
  struct Graph {
    Tensor a, b, z;
  };
  auto build = [&] {
    Tensor a = leaf({1, 2}, {2}), b = leaf({3, 4}, {2}), c = leaf({5, 6}, {2});
    Tensor y = ops::mul(a, Doubled::apply({b})[0]);
    y.grad_fn()->register_hook(log.post("post"));
    b.set_requires_grad(false);
    return Graph{a, b, ops::sum(ops::mul(y, c))};
  };
  Graph g = build();
  backward(g.z);
  EXPECT_EQ(log.take(), "post ([30, 48], [5, 12]) ([5, 6]); doubled");
  EXPECT_EQ(fmt(g.a.grad()), "[30, 48]");
  EXPECT_EQ(fmt(g.b.grad()), "None");
  g = build();
  backward(g.z, BackwardArgs().inputs({g.a}));
  EXPECT_EQ(log.take(), "post ([30, 48], None) ([5, 6])");
  EXPECT_EQ(fmt(g.a.grad()), "[30, 48]");
  g = build();
  EXPECT_EQ(fmt(grad({g.z}, {g.a})[0]), "[30, 48]");
  EXPECT_EQ(log.take(), "post ([30, 48], None) ([5, 6])");
  Doubled::log = nullptr;
}

// Hooks see differentiable gradients under create_graph; a retained .grad is recorded.
TEST(Hooks, CreateGraph) {
  Log log;
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, x);
  y.retain_grad();
  x.register_hook([&](const Tensor& g) {
    log.add(std::string("x requires_grad ") + (g.requires_grad() ? "True" : "False"));
    return Tensor();
  });
  Tensor g = grad({ops::sum(ops::mul(y, y))}, {x}, GradArgs().create_graph())[0];
  EXPECT_EQ(log.take(), "x requires_grad True");
  EXPECT_EQ(fmt(g), "[4, 32]");
  EXPECT_EQ(fmt(y.grad()), "[2, 8]");
  EXPECT_TRUE(g.requires_grad());
  EXPECT_TRUE(y.grad().requires_grad());
}

// backward() and backward(inputs=[x]) run x's AccumulateGrad with its node hooks and the
// post-accumulate-grad hook; grad() runs only x's tensor hook.
TEST(Hooks, AccumulateGradNodeHooks) {
  Log log;
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, 2.0);
  Tensor z = ops::sum(y);
  const std::shared_ptr<Node>& acc = y.grad_fn()->next_edge(0).function;
  ASSERT_EQ(acc->name(), "AccumulateGrad");
  acc->register_prehook(log.pre("accpre"));
  acc->register_hook(log.post("accpost"));
  x.register_hook(log.hook("x"));
  ScopedHook pacc(x.register_post_accumulate_grad_hook(
      [&](const Tensor& t) { log.add("xpacc " + fmt(t.grad())); }));
  backward(z, BackwardArgs().retain_graph());
  EXPECT_EQ(log.take(), "x [2, 2]; accpre ([2, 2]); xpacc [2, 2]; accpost () ([2, 2])");
  backward(z, BackwardArgs().inputs({x}).retain_graph());
  EXPECT_EQ(log.take(), "x [2, 2]; accpre ([2, 2]); xpacc [4, 4]; accpost () ([2, 2])");
  grad({z}, {x});
  EXPECT_EQ(log.take(), "x [2, 2]");
  EXPECT_EQ(fmt(x.grad()), "[4, 4]");
}

TEST(Hooks, LeafHookInTwoGraphs) {
  Log log;
  Tensor x = leaf({1, 2}, {2});
  x.register_hook(log.hook("x"));
  backward(ops::sum(ops::mul(x, 2.0)));
  backward(ops::sum(ops::mul(x, 3.0)));
  EXPECT_EQ(log.take(), "x [2, 2]; x [3, 3]");
  EXPECT_EQ(fmt(x.grad()), "[5, 5]");
}

// The root's own hooks see the seed.
TEST(Hooks, RootHook) {
  Log log;
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, 2.0);
  y.register_hook(log.hook("root", [](const Tensor& g) { return times(g, 3); }));
  y.retain_grad();
  backward(y, BackwardArgs().grad_tensors({ops::ones({2}, DType::kFloat64)}));
  EXPECT_EQ(log.take(), "root [1, 1]");
  EXPECT_EQ(fmt(x.grad()), "[6, 6]");
  EXPECT_EQ(fmt(y.grad()), "[3, 3]");
  Tensor y2 = ops::mul(x, 2.0);
  y2.register_hook(log.hook("yy", [](const Tensor& g) { return times(g, 3); }));
  Tensor r = grad({y2}, {y2}, GradArgs().grad_outputs({ops::ones({2}, DType::kFloat64)}))[0];
  EXPECT_EQ(log.take(), "yy [1, 1]");
  EXPECT_EQ(fmt(r), "[3, 3]");
}

// u and v are roots of one node and v is requested: the node only captures, and u's hooks see
// u's root gradient too (as PyTorch's input buffer holds it).
TEST(Hooks, RootGradientsReachACapturedNode) {
  Log log;
  Tensor x = leaf({1, 2}, {2});
  TensorList uv = Two::apply({x});
  const Tensor &u = uv[0], &v = uv[1];
  u.retain_grad();
  u.register_hook(log.hook("u"));
  Tensor r =
      grad({u, v}, {v},
           GradArgs().grad_outputs({values({5, 7}, {2}), ops::ones({2}, DType::kFloat64)}))[0];
  EXPECT_EQ(log.take(), "u [5, 7]");
  EXPECT_EQ(fmt(r), "[1, 1]");
  EXPECT_EQ(fmt(u.grad()), "[5, 7]");
}

// With one root, PyTorch runs the root's node even where it reaches no requested tensor (its
// graph root is always needed), and so its hooks: its golden is "y [1, 1] || result=None,
// y_grad=[1, 1]". The engine runs no node whose gradient reaches no requested tensor, and so
// none of its hooks (DEVIATIONS.md, extra-executions).
TEST(Hooks, SingleRootReachingNoInput) {
  Log log;
  Tensor x = leaf({1, 2}, {2}), w = leaf({3, 4}, {2});
  Tensor y = ops::mul(x, 2.0);
  y.retain_grad();
  y.register_hook(log.hook("y"));
  Tensor r =
      grad({y}, {w}, GradArgs().grad_outputs({ops::ones({2}, DType::kFloat64)}).allow_unused())[0];
  EXPECT_EQ(log.take(), "");
  EXPECT_EQ(fmt(r), "None");
  EXPECT_EQ(fmt(y.grad()), "None");
}

// PyTorch 2.15 moves the retains-grad hook of the old node's slot numbered by y's new output_nr
// (0: u's), not y's own: its golden is "u_grad=[1, 1], y_grad=[5, 5]", u's .grad holding y's
// gradient and y's its old value's (DEVIATIONS.md, retains-grad-moved-by-output-nr). The engine
// moves y's own hook.
TEST(Hooks, InPlaceOnARetainedSecondOutput) {
  Tensor x = leaf({0.5, 1}, {2});
  TensorList uy = Two::apply({x});
  Tensor &u = uy[0], &y = uy[1];
  u.retain_grad();
  y.retain_grad();
  ops::mul_(y, values({5, 5}, {2}));
  backward(ops::sum(y));
  EXPECT_EQ(fmt(u.grad()), "None");
  EXPECT_EQ(fmt(y.grad()), "[1, 1]");
  EXPECT_EQ(fmt(x.grad()), "[15, 15]");
}

// Beyond the goldens: the engine's own guarantees.

// A retaining tensor that dies takes its link with it: the graph runs on, and nothing is written.
TEST(Hooks, RetainedTensorThatDied) {
  Tensor x = leaf({1, 2}, {2});
  Tensor z;
  {
    Tensor y = ops::mul(x, 2.0);
    y.retain_grad();
    z = ops::sum(ops::mul(y, y));
  }
  backward(z);
  EXPECT_EQ(fmt(x.grad()), "[8, 16]");
}

// A post-accumulate-grad hook does not keep its leaf alive, as the graph does not: a leaf
// dropped before the backward gets no .grad and its hook does not fire. A leaf whose hook is
// never removed is freed with the hook (it and its AccumulateGrad once kept each other).
TEST(Hooks, PostAccumulateHookDiesWithItsLeaf) {
  const int64_t base = live_bytes();
  Log log;
  Tensor z;
  {
    Tensor x = leaf({1, 2}, {2});
    x.register_post_accumulate_grad_hook(
        [&](const Tensor& t) { log.add("xpacc " + fmt(t.grad())); });
    z = ops::sum(ops::mul(x, 2.0));
  }
  backward(z);
  EXPECT_EQ(log.take(), "");
  z = Tensor();
  {
    Tensor w = leaf({1, 2}, {2});
    w.register_post_accumulate_grad_hook(
        [&](const Tensor& t) { log.add("wpacc " + fmt(t.grad())); });
    backward(ops::sum(ops::mul(w, 3.0)));
    EXPECT_EQ(log.take(), "wpacc [3, 3]");
  }
  EXPECT_EQ(live_bytes(), base);
}

// Note [Upgrading a plain pointer]: the leaf is dropped on one thread while a backward on
// another runs its AccumulateGrad. The hook is handed a live leaf, or does not fire; nothing
// leaks or is freed twice (under ThreadSanitizer and AddressSanitizer in CI).
TEST(Hooks, LeafDroppedWhileItsPostAccumulateHookRuns) {
  const int64_t base = live_bytes();
  int fired = 0;
  for (int round = 0; round < 200; ++round) {
    Tensor x = leaf({1, 2, 3}, {3});
    std::atomic<int> seen{0};
    x.register_post_accumulate_grad_hook([&seen](const Tensor& t) {
      if (fmt(t.grad()) == "[2, 2, 2]") seen.fetch_add(1);
    });
    Tensor loss = ops::sum(ops::mul(x, 2.0));
    std::thread dropper([&x] { x = Tensor(); });
    backward(loss);
    dropper.join();
    fired += seen.load();
  }
  EXPECT_LE(fired, 200);
  EXPECT_EQ(live_bytes(), base);
}

// Note [Hooks], Snapshots: calls over one graph on several threads run its hooks while another
// thread registers and removes hooks on the same nodes; each call reads a stable table. (Under
// ThreadSanitizer in CI: the "concurrency" tag.)
TEST(Hooks, ConcurrentCallsAndRegistrations) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, x);
  Tensor z = ops::sum(ops::mul(y, 3.0));
  std::atomic<int> fired{0};
  y.register_hook([&](const Tensor&) {
    fired.fetch_add(1, std::memory_order_relaxed);
    return Tensor();
  });
  y.retain_grad();
  constexpr int kThreads = 4, kCalls = 50;
  std::atomic<bool> done{false};
  std::thread churn([&] {
    while (!done.load(std::memory_order_acquire)) {
      ScopedHook t(y.register_hook([](const Tensor& g) { return g; }));
      ScopedHook pre(y.grad_fn()->register_prehook([](const TensorList&) { return TensorList(); }));
      ScopedHook post(x.register_post_accumulate_grad_hook([](const Tensor&) {}));
    }
  });
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) {
        const Tensor g = grad({z}, {x}, GradArgs().retain_graph())[0];
        if (g.to_vector() != std::vector<double>{6, 12}) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& c : callers) c.join();
  done.store(true, std::memory_order_release);
  churn.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(fired.load(), kThreads * kCalls);
  EXPECT_EQ(fmt(y.grad()), "[600, 600]");  // 3 per call, every call: the sums are serialized
}

// A retaining tensor dropped on one thread while a backward on another writes its .grad: the
// hook finishes first or finds the tensor gone (RetainedTensor).
TEST(Hooks, RetainingTensorDroppedDuringABackwardOnAnotherThread) {
  const int64_t base = live_bytes();
  for (int round = 0; round < 200; ++round) {
    Tensor x = leaf({1, 2, 3}, {3});
    Tensor y = ops::mul(x, 2.0);
    y.retain_grad();
    Tensor loss = ops::sum(ops::mul(y, 5.0));  // the graph does not hold y
    std::thread dropper([&y] { y = Tensor(); });
    backward(loss);
    dropper.join();
    EXPECT_EQ(fmt(x.grad()), "[10, 10, 10]");
  }
  EXPECT_EQ(live_bytes(), base);
}

// Hooks cost nothing where none is registered: a node without hooks has no hook table at all.
// A post-hook is handed the gradient the node's formula computed, also where that gradient would
// have been added straight into one already waiting for the same input (Note [Sums fused into
// formulas], engine/engine.cc): found by the API model (seed 21), where the hook got None.
// x = tensor([0.5, -1.], requires_grad=True); y = x.tanh(); z = y - x
// y.grad_fn.register_hook(f); z.backward(torch.ones(2)) -> grad_inputs (1 - tanh(x)^2,)
TEST(Hooks, APostHookSeesAGradientThatCouldBeFusedIntoAWaitingSum) {
  const Tensor x = leaf({0.5, -1.0}, {2});
  const Tensor y = ops::tanh(x);
  const Tensor z = ops::sub(y, x);
  std::vector<Tensor> seen;
  y.grad_fn()->register_hook([&](const TensorList& gis, const TensorList&) {
    seen = gis;
    return TensorList{};
  });
  backward({z}, BackwardArgs().grad_tensors({leaf({1.0, 1.0}, {2}, false)}));
  ASSERT_EQ(seen.size(), 1u);
  ASSERT_TRUE(seen[0].defined());
  const double t0 = std::tanh(0.5), t1 = std::tanh(-1.0);
  EXPECT_NEAR(seen[0].to_vector()[0], 1 - t0 * t0, 1e-6);
  EXPECT_NEAR(seen[0].to_vector()[1], 1 - t1 * t1, 1e-6);
  EXPECT_NEAR(x.grad().to_vector()[0], -t0 * t0, 1e-6);
}

TEST(Hooks, NoTableWithoutHooks) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, 2.0);
  EXPECT_EQ(y.grad_fn()->hooks_if_any(), nullptr);
  EXPECT_FALSE(y.grad_fn()->has_hooks());
  RemovableHandle h = y.register_hook([](const Tensor& g) { return g; });
  EXPECT_TRUE(y.grad_fn()->has_hooks());
  EXPECT_EQ(count_hooks(*y.grad_fn()).tensor, 1u);
  h.remove();
  EXPECT_FALSE(y.grad_fn()->has_hooks());
}

}  // namespace
}  // namespace ag
