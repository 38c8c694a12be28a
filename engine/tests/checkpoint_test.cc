// Activation checkpointing (Note [Activation checkpointing], engine/checkpoint.h): gradients
// bit-equal to the plain run's (dropout included), the recomputation's count, its errors, and the
// peak bytes of a 20-layer MLP checkpointed per layer against the plain run's.
#include "engine/checkpoint.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

#include "engine/autograd.h"
#include "engine/grad_mode.h"
#include "engine/memory/allocator.h"
#include "engine/node.h"
#include "engine/saved_tensor_hooks.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_error;

// One residual block of a transformer's MLP: h + tanh(dropout(tanh(h W1)) W2), 4x wide inside.
struct Block {
  Tensor w1, w2;
  uint64_t seed;
  TensorList operator()(const TensorList& in) const {
    const Tensor& h = in[0];
    const Tensor inner = ops::dropout(ops::tanh(ops::mm(h, w1)), 0.25, /*train=*/true, seed);
    return {ops::add(h, ops::tanh(ops::mm(inner, w2)))};
  }
};

std::vector<Block> blocks(int layers, int64_t width) {
  std::vector<Block> out;
  for (int i = 0; i < layers; ++i) {
    Tensor w1 = ops::uniform({width, 4 * width}, -0.3, 0.3, 10 + 2 * i);
    Tensor w2 = ops::uniform({4 * width, width}, -0.3, 0.3, 11 + 2 * i);
    w1.set_requires_grad(true);
    w2.set_requires_grad(true);
    out.push_back({w1, w2, static_cast<uint64_t>(100 + i)});
  }
  return out;
}

// The loss of the stack on x, each block checkpointed or not.
Tensor loss_of(const std::vector<Block>& net, const Tensor& x, bool checkpointed) {
  Tensor h = x;
  for (const Block& b : net) h = checkpointed ? checkpoint(b, {h})[0] : b({h})[0];
  return ops::sum(ops::mul(h, h));
}

TensorList grads_of(const std::vector<Block>& net, const Tensor& x, bool checkpointed) {
  TensorList wrt{x};
  for (const Block& b : net) {
    wrt.push_back(b.w1);
    wrt.push_back(b.w2);
  }
  return grad({loss_of(net, x, checkpointed)}, wrt);
}

TEST(Checkpoint, GradientsEqualThePlainRunBitwiseWithDropout) {
  const std::vector<Block> net = blocks(3, 8);
  Tensor x = ops::uniform({5, 8}, -1, 1, 1);
  x.set_requires_grad(true);
  const TensorList plain = grads_of(net, x, false), checkpointed = grads_of(net, x, true);
  ASSERT_EQ(plain.size(), checkpointed.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(plain[i].to_vector(), checkpointed[i].to_vector()) << "gradient " << i;
  }
}

TEST(Checkpoint, NothingIsKeptAndEachBackwardRecomputesOnce) {
  const Block b = blocks(1, 4)[0];
  int calls = 0;
  auto counted = [&](const TensorList& in) {
    ++calls;
    return b(in);
  };
  Tensor x = ops::uniform({3, 4}, -1, 1, 2);
  x.set_requires_grad(true);
  const Tensor y = ops::sum(checkpoint(counted, {x})[0]);
  EXPECT_EQ(calls, 1);
  // The block's nodes keep no value of their own: each is packed as its number.
  int packed = 0;
  std::vector<const Node*> stack{y.grad_fn().get()};
  std::set<const Node*> seen;
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    for (const Node::SavedValue& v : n->saved_values()) {
      if (v.state != Node::SavedValue::State::kKept) continue;
      EXPECT_EQ(v.nbytes, 0u) << n->name() << " " << v.name << " " << v.describe;
      packed += v.describe.rfind("packed", 0) == 0;
    }
    for (const Edge& e : n->next_edges()) {
      if (e.is_valid()) stack.push_back(e.function.get());
    }
  }
  EXPECT_EQ(packed, 7);  // mm: h, w1; tanh: result; dropout: mask; mm: inner, w2; tanh: result
  const Tensor g1 = grad({y}, {x}, GradArgs().retain_graph())[0];
  EXPECT_EQ(calls, 2);
  const Tensor g2 = grad({y}, {x})[0];
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(g1.to_vector(), g2.to_vector());
  EXPECT_EQ(g1.to_vector(), grad({ops::sum(b({x})[0])}, {x})[0].to_vector());
}

TEST(Checkpoint, AnInputWrittenAfterTheForwardRaisesAndTheGraphStaysUsable) {
  const Block b = blocks(1, 4)[0];
  Tensor x = ops::uniform({3, 4}, -1, 1, 3);
  x.set_requires_grad(true);
  Tensor h = ops::mul(x, 1.0);
  const Tensor y = ops::sum(checkpoint(b, {h})[0]);
  {
    NoGradGuard no_grad;
    ops::add_(h, ops::ones_like(h));
  }
  expect_error([&] { grad({y}, {x}); }, {"checkpoint: input 0", "modified by an in-place"});
  const Tensor fresh = ops::sum(checkpoint(b, {ops::mul(x, 1.0)})[0]);
  EXPECT_EQ(grad({fresh}, {x})[0].shape(), x.shape());
}

TEST(Checkpoint, ARecomputationThatSavesOtherValuesRaises) {
  Tensor x = ops::uniform({3}, -1, 1, 4);
  x.set_requires_grad(true);
  int calls = 0;
  auto unsteady = [&](const TensorList& in) {
    // The second run saves one value more (exp saves its result).
    return TensorList{++calls == 1 ? ops::tanh(in[0]) : ops::exp(ops::tanh(in[0]))};
  };
  const Tensor y = ops::sum(checkpoint(unsteady, {x})[0]);
  expect_error([&] { grad({y}, {x}); },
               {"checkpoint: the recomputation saved 2 values", "the forward saved 1"});
}

// Two threads differentiate one checkpointed graph at once: each recomputes under the frame's
// lock, and both get the plain run's gradient.
TEST(Checkpoint, ConcurrentBackwardCallsThroughOneCheckpointAgree) {
  const std::vector<Block> net = blocks(2, 8);
  Tensor x = ops::uniform({4, 8}, -1, 1, 6);
  x.set_requires_grad(true);
  const Tensor loss = loss_of(net, x, /*checkpointed=*/true);
  const std::vector<double> want = grad({loss_of(net, x, false)}, {x})[0].to_vector();
  std::vector<std::vector<double>> got(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 10; ++k)
        got[t] = grad({loss}, {x}, GradArgs().retain_graph())[0].to_vector();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(got[0], want);
  EXPECT_EQ(got[1], want);
}

// Peak bytes of a forward and backward, above what was live before it.
template <typename Step>
int64_t peak_of(const Step& step) {
  const int64_t before = live_bytes();
  reset_peak_bytes();
  step();
  return peak_bytes() - before;
}

TEST(Checkpoint, TwentyLayersCheckpointedPerLayerPeakBelowThreeTenthsOfThePlainRun) {
  const std::vector<Block> net = blocks(20, 32);
  const Tensor x = ops::uniform({1024, 32}, -1, 1, 5);
  auto step = [&](bool checkpointed) {
    for (const Block& b : net) {  // each step starts without .grad
      for (Tensor w : {b.w1, b.w2}) w.set_grad(Tensor());
    }
    return peak_of([&] { backward({loss_of(net, x, checkpointed)}); });
  };
  const int64_t plain = step(false), checkpointed = step(true);
  RecordProperty("plain_peak_bytes", std::to_string(plain));
  RecordProperty("checkpointed_peak_bytes", std::to_string(checkpointed));
  EXPECT_LE(static_cast<double>(checkpointed), 0.3 * static_cast<double>(plain))
      << "plain " << plain << " B, checkpointed " << checkpointed << " B";
  EXPECT_GT(checkpointed, 0);
}

}  // namespace
}  // namespace ag
