// Heap allocations of the engine's smallest workloads, counted by a replacement operator new
// (this binary's only): the fixed cost of a small backward call is largely malloc and free, so
// every allocation on these paths is accounted for here, and a new one fails the test. What makes
// the counts low: a backward call reuses its thread's containers (engine/scratch_pool.h, Note
// [Reused node states]) and ops take tensor metadata and nodes from per-thread pools (Note
// [Pooled tensor metadata]). The pools are bypassed under AddressSanitizer, so the counts are
// only checked without it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <thread>

#include "engine/autograd.h"
#include "engine/memory/allocator.h"
#include "engine/memory/object_pool.h"
#include "ops/ops.h"

namespace {
// Constant-initialized: reading them from operator new needs no initialization on any thread.
thread_local bool t_counting = false;
thread_local int64_t t_allocations = 0;

void* counted_malloc(size_t bytes) {
  if (t_counting) ++t_allocations;
  if (void* p = std::malloc(bytes ? bytes : 1)) return p;
  throw std::bad_alloc();
}
}  // namespace

// The array and nothrow forms call these (their default definitions do).
void* operator new(size_t bytes) { return counted_malloc(bytes); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace ag {
namespace {

// Heap allocations made on this thread by `f()`.
template <typename F>
int64_t allocations_of(F&& f) {
  t_allocations = 0;
  t_counting = true;
  f();
  t_counting = false;
  return t_allocations;
}

struct TinyGraph {
  Tensor a = ops::uniform({2, 2}, 0, 1, 1).set_requires_grad(true);
  Tensor b = ops::uniform({2, 2}, 0, 1, 2).set_requires_grad(true);
  Tensor gradient = ops::ones({2, 2});

  // PyTorch's torch.autograd.grad(a * b, [a, b], gradient), forward included; the checksum is
  // only there so that the results are read.
  float call() const {
    TensorList g = grad({a * b}, {a, b}, GradArgs().grad_outputs({gradient}));
    return g[0].data<float>()[0] + g[1].data<float>()[0];
  }
};

// Once the thread's pools and scratch containers are warm, a call of grad(a * b, {a, b},
// gradient), forward included, allocates only the list grad() returns. The rest comes from:
//   the output tensor's metadata and storage      per-thread pools (Note [Pooled tensor metadata])
//   mul's node and its per-input lists            a pool, inline storage (Note [Small vectors])
//   grad()'s arguments                            read in place (TensorArgs) or kept inline
//   the backward call's containers, node states   reused (ScratchLease, Note [Reused node states])
//   the list of gradients the node returns        the list it was handed (OpNode::apply)
constexpr int64_t kTinyGraphAllocations = 1;

TEST(Allocations, TinyGraphGradCall) {
  if (!kPoolObjects) GTEST_SKIP() << "the pools are bypassed under AddressSanitizer";
  const TinyGraph graph;
  for (int i = 0; i < 3; ++i) graph.call();  // warms the pools and the scratch containers
  float checksum = 0;
  EXPECT_EQ(allocations_of([&] { checksum += graph.call(); }), kTinyGraphAllocations);
  // Steady: every further call allocates as much.
  EXPECT_EQ(allocations_of([&] {
              for (int i = 0; i < 10; ++i) checksum += graph.call();
            }),
            10 * kTinyGraphAllocations);
  EXPECT_GT(checksum, 0);
}

// Each thread has its own pools and scratch containers (Note [Thread caches]): two threads
// differentiating one shared graph at the same time allocate what one does alone.
TEST(Allocations, TinyGraphPerThread) {
  if (!kPoolObjects) GTEST_SKIP() << "the pools are bypassed under AddressSanitizer";
  const TinyGraph graph;
  int64_t counted[2] = {};
  auto worker = [&](int k) {
    for (int i = 0; i < 3; ++i) graph.call();
    counted[k] = allocations_of([&] {
      for (int i = 0; i < 50; ++i) graph.call();
    });
  };
  std::thread first(worker, 0), second(worker, 1);
  first.join();
  second.join();
  EXPECT_EQ(counted[0], 50 * kTinyGraphAllocations);
  EXPECT_EQ(counted[1], 50 * kTinyGraphAllocations);
}

// What a call leaves for the next one on its thread holds no tensor (Note [Reused node states]):
// once its results are dropped, every byte the call allocated is free again.
TEST(Allocations, ReusedStateHoldsNoTensor) {
  const TinyGraph graph;
  const int64_t before = live_bytes();
  TensorList g =
      grad({graph.a * graph.b}, {graph.a, graph.b}, GradArgs().grad_outputs({graph.gradient}));
  EXPECT_EQ(live_bytes(), before + 2 * 16);  // the two gradients
  g.clear();
  EXPECT_EQ(live_bytes(), before);
}

// A chain y = x * s * ... * s of n multiplications by a scalar, then grad(sum(y), {x}): once warm,
// no link allocates anything, whatever the chain's length. The call allocates grad()'s result,
// and sum's backward broadcasts the scalar gradient to x's shape with a strided copy, whose index
// vectors are the other four.
int64_t chain_allocations(int length) {
  Tensor x = ops::uniform({4}, 0, 1, 3).set_requires_grad(true);
  auto call = [&] {
    Tensor y = x;
    for (int i = 0; i < length; ++i) y = y * 1.0001;
    return grad({ops::sum(y)}, {x})[0].data<float>()[0];
  };
  for (int i = 0; i < 3; ++i) call();
  return allocations_of(call);
}

TEST(Allocations, ScalarChainPerLink) {
  if (!kPoolObjects) GTEST_SKIP() << "the pools are bypassed under AddressSanitizer";
  EXPECT_EQ(chain_allocations(100), 1 + 4);
  EXPECT_EQ(chain_allocations(300), 1 + 4);
}

}  // namespace
}  // namespace ag
