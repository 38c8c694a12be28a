// Saved-tensor hooks, pinned to PyTorch 2.15 (Note [Saved-tensor hooks],
// engine/saved_tensor_hooks.h). Each case's expected line is the one of the same name that
// engine/tests/saved_tensor_hooks_goldens.py prints.
#include "engine/saved_tensor_hooks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/autograd.h"
#include "engine/function.h"
#include "engine/grad_mode.h"
#include "engine/options.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_error;
using testing::fmt;
using testing::leaf;

std::string join(std::vector<std::string> parts, bool sorted = false) {
  if (sorted) std::sort(parts.begin(), parts.end());
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

std::any keep(const Tensor& t) { return t; }
Tensor give_back(const std::any& p) { return std::any_cast<Tensor>(p); }

// Logs the values it packs.
struct PackLog {
  std::vector<std::string> packed;
  PackHook hook() {
    return [this](const Tensor& t) -> std::any {
      packed.push_back(fmt(t));
      return t;
    };
  }
};

TEST(SavedTensorHooks, PackSeesWhatTheOpsSave) {
  const Tensor x = leaf({1, 2, 3}, {3});
  PackLog log;
  Tensor z;
  {
    SavedTensorsHooks hooks(log.hook(), give_back);
    z = ops::exp(ops::mul(x, x));
  }
  const Tensor g = grad({ops::sum(z)}, {x})[0];
  EXPECT_EQ(std::to_string(log.packed.size()) + "; " + join(log.packed, true) + "; " + fmt(g),
            "3; [1, 2, 3], [1, 2, 3], [2.71828, 54.5982, 8103.08]; [5.43656, 218.393, 48618.5]");
}

TEST(SavedTensorHooks, GuardedSavesAreNotPacked) {
  const Tensor x = leaf({1, 2}, {2}), w = leaf({3, 4}, {2}, false);
  PackLog log;
  SavedTensorsHooks hooks(log.hook(), give_back);
  const Tensor y = ops::mul(x, w);
  EXPECT_EQ(std::to_string(log.packed.size()) + "; " + join(log.packed), "1; [3, 4]");
  // Without the guards (Note [Guarded saves]) both operands are kept, and packed.
  EngineOptions unguarded = current_options();
  unguarded.guard_saves = false;
  OptionsGuard options(unguarded);
  log.packed.clear();
  const Tensor y2 = ops::mul(x, w);
  EXPECT_EQ(log.packed.size(), 2u);
}

TEST(SavedTensorHooks, UnpackRunsAtEachUnpack) {
  const Tensor x = leaf({0.5, 1}, {2});
  int unpacks = 0;
  Tensor y;
  {
    SavedTensorsHooks hooks(keep, [&](const std::any& p) {
      ++unpacks;
      return give_back(p);
    });
    y = ops::sin(ops::mul(x, 2.0));
  }
  backward({ops::sum(y)}, BackwardArgs().retain_graph());
  backward({ops::sum(y)});
  EXPECT_EQ(std::to_string(unpacks) + "; " + fmt(x.grad()), "2; [2.16121, -1.66459]");
}

TEST(SavedTensorHooks, PackedValuesHaveNoVersionCheck) {
  const Tensor x = leaf({1, 2}, {2});
  Tensor w, q;
  {
    SavedTensorsHooks hooks([](const Tensor& t) -> std::any { return ops::clone(t); }, give_back);
    w = ops::mul(x, 2.0);
    q = ops::mul(w, w);
  }
  {
    NoGradGuard no_grad;
    ops::add_(w, ops::ones_like(w));
  }
  backward({ops::sum(q)});
  EXPECT_EQ(fmt(x.grad()), "[8, 16]");
}

TEST(SavedTensorHooks, PackWritingItsInputRaises) {
  const Tensor x = leaf({1, 2}, {2});
  {
    SavedTensorsHooks hooks(
        [](const Tensor& t) -> std::any {
          Tensor alias = t;
          ops::add_(alias, ops::zeros_like(t));
          return t;
        },
        give_back);
    expect_error([&] { ops::mul(x, x); },
                 {"A saved tensor pack hook is modifying its input in place"});
  }
  // The graph stays usable.
  const Tensor g = grad({ops::sum(ops::mul(x, x))}, {x})[0];
  EXPECT_EQ(fmt(g), "[2, 4]");
}

TEST(SavedTensorHooks, UnpackedLeafKeepsItsHistory) {
  const Tensor x = leaf({1, 2}, {2});
  Tensor q;
  {
    SavedTensorsHooks hooks([](const Tensor& t) -> std::any { return t.detach(); }, give_back);
    q = ops::mul(ops::mul(x, x), x);
  }
  const Tensor g = grad({ops::sum(q)}, {x}, GradArgs().create_graph())[0];
  backward({ops::sum(g)});
  EXPECT_EQ(
      std::string(g.requires_grad() ? "True" : "False") + "; " + fmt(g) + "; " + fmt(x.grad()),
      "True; [3, 12]; [6, 12]");
}

TEST(SavedTensorHooks, UnpackedOutputKeepsItsNode) {
  const Tensor x = leaf({0.5, 1}, {2});
  Tensor z;
  {
    SavedTensorsHooks hooks([](const Tensor& t) -> std::any { return t.detach(); }, give_back);
    z = ops::exp(x);
  }
  const Tensor g = grad({ops::sum(z)}, {x}, GradArgs().create_graph())[0];
  const Tensor gg = grad({ops::sum(g)}, {x})[0];
  EXPECT_EQ(fmt(g) + "; " + fmt(gg), "[1.64872, 2.71828]; [1.64872, 2.71828]");
}

TEST(SavedTensorHooks, TheInnermostScopeApplies) {
  const Tensor x = leaf({1, 2}, {2});
  std::vector<std::string> log;
  auto named = [&](std::string name) {
    return [&log, name](const Tensor& t) -> std::any {
      log.push_back(name);
      return t;
    };
  };
  {
    SavedTensorsHooks outer(named("outer"), give_back);
    {
      SavedTensorsHooks inner(named("inner"), give_back);
      ops::exp(x);
    }
    ops::sin(x);
  }
  ops::cos(x);
  EXPECT_EQ(join(log), "inner, outer");
  EXPECT_EQ(current_saved_tensor_hooks(), nullptr);
}

TEST(SavedTensorHooks, ReleasedPackedValuesAreFreed) {
  const Tensor x = leaf({1, 2}, {2});
  auto alive = std::make_shared<int>(0);  // one reference per packed object
  Tensor y;
  {
    SavedTensorsHooks hooks(
        [alive](const Tensor& t) -> std::any { return std::make_pair(alive, t); },
        [](const std::any& p) {
          return std::any_cast<const std::pair<std::shared_ptr<int>, Tensor>&>(p).second;
        });
    y = ops::exp(x);
  }
  EXPECT_EQ(alive.use_count(), 3);  // here, in the scope's pack hook (gone), and one packed value
  backward({ops::sum(y)});
  EXPECT_EQ(alive.use_count(), 1);
  expect_error([&] { backward({ops::sum(y)}); },
               {"Trying to backward through the graph a second time"});
}

struct Cube : Function<Cube> {
  static constexpr const char* name = "Cube";
  static TensorList forward(ForwardCtx& ctx, const TensorList& in) {
    ctx.save_for_backward({in[0]});
    return {ops::mul(ops::mul(in[0], in[0]), in[0])};
  }
  static TensorList backward(BackwardCtx& ctx, const TensorList& grads) {
    const Tensor t = ctx.saved_tensors()[0];
    return {ops::mul(ops::mul(ops::mul(t, t), 3.0), grads[0])};
  }
};

TEST(SavedTensorHooks, CustomFunctionSavesArePacked) {
  const Tensor x = leaf({1, 2}, {2});
  PackLog log;
  Tensor y;
  {
    SavedTensorsHooks hooks(log.hook(), give_back);
    y = Cube::apply({x})[0];
  }
  backward({ops::sum(y)});
  EXPECT_EQ(std::to_string(log.packed.size()) + "; " + fmt(x.grad()), "1; [3, 12]");
}

TEST(SavedTensorHooks, SaveOnCpuKeepsACpuTensorAsItIs) {
  const Tensor x = leaf({1, 2}, {2});
  Tensor h, y;
  {
    SaveOnCpu on_cpu;
    h = ops::mul(x, 1.0);
    y = ops::mul(h, h);
  }
  {
    NoGradGuard no_grad;
    ops::mul_(h, ops::full({2}, 10.0, DType::kFloat64));
  }
  backward({ops::sum(y)});
  EXPECT_EQ(fmt(x.grad()), "[20, 40]");
}

// The engine's own rule: unpack must give back the saved value's shape, dtype and device.
TEST(SavedTensorHooks, UnpackOfAnotherShapeOrDtypeRaisesNamingTheValue) {
  const Tensor x = leaf({1, 2, 3}, {3});
  Tensor y, z;
  {
    SavedTensorsHooks hooks(keep, [](const std::any&) { return ops::ones({5}, DType::kFloat64); });
    y = ops::exp(x);
  }
  expect_error([&] { backward({ops::sum(y)}, BackwardArgs().retain_graph()); },
               {"saved-tensor unpack hook", "'exp'", "float64[3]", "float64[5]"});
  {
    SavedTensorsHooks hooks(keep, [](const std::any& p) {
      return ops::from_vector(give_back(p).to_vector(), {3}, DType::kFloat32);
    });
    z = ops::exp(x);
  }
  expect_error([&] { backward({ops::sum(z)}); }, {"saved-tensor unpack hook", "float32[3]"});
  // The graph stays usable.
  const Tensor g = grad({ops::sum(ops::exp(x))}, {x})[0];
  EXPECT_EQ(fmt(g), "[2.71828, 7.38906, 20.0855]");
}

// Identity hooks change no gradient, bitwise, and pack exactly what the nodes keep otherwise.
TEST(SavedTensorHooks, IdentityHooksChangeNoGradient) {
  auto run = [](bool hooked, int* packs) {
    const Tensor x = leaf({0.5, -1, 2, 0.25}, {2, 2}), w = leaf({1, 2, 3, 4}, {2, 2});
    std::unique_ptr<SavedTensorsHooks> hooks;
    if (hooked) {
      hooks = std::make_unique<SavedTensorsHooks>(
          [packs](const Tensor& t) -> std::any {
            ++*packs;
            return t;
          },
          give_back);
    }
    const Tensor loss = ops::sum(ops::tanh(ops::mm(ops::sigmoid(ops::mm(x, w)), w)));
    hooks.reset();
    return grad({loss}, {x, w}, GradArgs().create_graph());
  };
  int packs = 0;
  const TensorList plain = run(false, nullptr), hooked = run(true, &packs);
  ASSERT_EQ(plain.size(), hooked.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(plain[i].to_vector(), hooked[i].to_vector());
  EXPECT_EQ(packs, 6);  // mm: x, w; sigmoid: result; mm: s, w; tanh: result
}

}  // namespace
}  // namespace ag
