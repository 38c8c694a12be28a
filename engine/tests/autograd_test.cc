#include "engine/autograd.h"

#include <gtest/gtest.h>

#include <thread>

#include "engine/accumulate_grad.h"
#include "engine/call.h"
#include "engine/counters.h"
#include "engine/function.h"
#include "engine/memory/allocator.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::expect_values;
using testing::leaf;

TEST(Backward, AccumulatesIntoLeafGrads) {
  Tensor a = leaf({1, 2}, {2});
  Tensor b = leaf({3, 4}, {2});
  Tensor y = ops::sum(ops::add(ops::mul(a, b), a));  // dy/da = b + 1, dy/db = a
  backward(y);
  expect_values(a.grad(), {4, 5});
  expect_values(b.grad(), {1, 2});
  EXPECT_FALSE(a.grad().requires_grad());
  // A second graph accumulates on top.
  backward(ops::sum(ops::mul(a, 2.0)));
  expect_values(a.grad(), {6, 7});
}

TEST(Backward, NonLeafTensorsGetNoGrad) {
  Tensor a = leaf({1}, {1});
  Tensor h = ops::mul(a, 3.0);
  backward(ops::mul(h, h));
  expect_values(a.grad(), {18});
  EXPECT_FALSE(h.grad().defined());
}

TEST(Backward, GradTensorsWeightNonScalarOutputs) {
  Tensor a = leaf({1, 2}, {2});
  Tensor y = ops::mul(a, a);
  backward({y}, BackwardArgs().grad_tensors({ops::from_vector({10, 100}, {2}, DType::kFloat64)}));
  expect_values(a.grad(), {20, 400});
}

TEST(Backward, MultipleRootsAreSummed) {
  Tensor a = leaf({2}, {1});
  backward({ops::mul(a, a), ops::mul(a, 3.0)});
  expect_values(a.grad(), {7});
}

TEST(Backward, WithInputsAccumulatesOnlyThereAndSkipsTheirGradFn) {
  Tensor a = leaf({1, 2}, {2});
  Tensor c = leaf({3, 4}, {2});
  Tensor h = ops::mul(a, 3.0);  // an interior input
  Tensor y = ops::sum(ops::mul(h, c));
  reset_counters();
  counters().trace_executed = true;
  backward({y}, BackwardArgs().inputs({h, c}));
  counters().trace_executed = false;
  expect_values(h.grad(), {3, 4});  // dy/dh = c
  expect_values(c.grad(), {3, 6});  // dy/dc = h
  EXPECT_FALSE(a.grad().defined());
  // Executed: sum, mul and c's AccumulateGrad (as PyTorch's exec_info, Note [Hooks]); h's own
  // grad_fn (mul_scalar) never ran.
  EXPECT_EQ(counters().executed,
            (std::vector<uint64_t>{y.grad_fn()->sequence_nr(),
                                   y.grad_fn()->next_edge(0).function->sequence_nr(),
                                   gradient_edge(c).function->sequence_nr()}));
}

// A graph does not keep its leaves alive (engine/accumulate_grad.h): the gradient of a leaf
// nobody holds is dropped, and the rest of the backward runs as usual.
TEST(Backward, GradientOfADroppedLeafIsDropped) {
  Tensor x = leaf({1, 2}, {2});
  Tensor w = leaf({3, 4}, {2});
  Tensor loss = ops::sum(ops::add(ops::mul(x, 3.0), w));  // nothing saves x
  auto accumulator = std::dynamic_pointer_cast<AccumulateGrad>(grad_accumulator(x));
  ASSERT_NE(accumulator, nullptr);
  EXPECT_TRUE(accumulator->has_variable());
  x = Tensor();
  EXPECT_FALSE(accumulator->has_variable());  // the dying leaf cleared the node's pointer
  backward(loss);
  expect_values(w.grad(), {1, 1});
}

// The leaf may die on one thread while a backward on another is about to accumulate into it:
// either the gradient lands before the leaf goes (and goes with it), or it is dropped. A gradient
// written into a leaf that was already gone would never be freed, so every byte must come back;
// the ASan and TSan runs check the same test for use after free and races.
TEST(Backward, LeafDroppedDuringABackwardOnAnotherThread) {
  const int64_t base = live_bytes();
  for (int round = 0; round < 200; ++round) {
    Tensor x = leaf({1, 2, 3}, {3});
    Tensor loss = ops::sum(ops::mul(ops::mul(x, 2.0), 5.0));  // the graph does not hold x
    std::thread dropper([&x] { x = Tensor(); });
    backward(loss);
    dropper.join();
  }
  EXPECT_EQ(live_bytes(), base);
}

TEST(Grad, ReturnsGradientsWithoutTouchingDotGrad) {
  Tensor a = leaf({1, 2}, {2});
  Tensor b = leaf({3, 4}, {2});
  Tensor y = ops::sum(ops::mul(a, b));
  TensorList g = grad({y}, {a, b});
  expect_values(g[0], {3, 4});
  expect_values(g[1], {1, 2});
  EXPECT_FALSE(a.grad().defined());
  EXPECT_FALSE(b.grad().defined());
}

TEST(Grad, InteriorInputsAndOutputAsInput) {
  Tensor a = leaf({2}, {1});
  Tensor h = ops::mul(a, a);
  Tensor y = ops::mul(h, 5.0);
  expect_values(grad({y}, {h}, GradArgs().retain_graph())[0], {5});
  expect_values(grad({y}, {y}, GradArgs().retain_graph())[0], {1});
  expect_values(grad({a}, {a})[0], {1});
}

TEST(Grad, CreateGraphGivesDifferentiableGradients) {
  Tensor x = leaf({2}, {1});
  Tensor y = ops::mul(ops::mul(x, x), x);  // x^3
  Tensor g = grad({y}, {x}, GradArgs().create_graph())[0];
  expect_values(g, {12});  // 3x^2
  EXPECT_TRUE(g.requires_grad());
  Tensor gg = grad({g}, {x}, GradArgs().create_graph())[0];
  expect_values(gg, {12});  // 6x
  Tensor ggg = grad({gg}, {x})[0];
  expect_values(ggg, {6});
}

TEST(Grad, CreateGraphBackwardMakesDotGradDifferentiable) {
  Tensor x = leaf({3}, {1});
  backward(TensorList{ops::mul(x, x)}, BackwardArgs().create_graph());
  Tensor g = x.grad();
  EXPECT_TRUE(g.requires_grad());
  expect_values(grad({g}, {x})[0], {2});
  x.set_grad(Tensor());  // x.grad's graph references x: break the cycle (see autograd.h)
}

TEST(Grad, WithoutCreateGraphResultsCarryNoHistory) {
  Tensor x = leaf({2}, {1});
  Tensor g = grad({ops::mul(x, x)}, {x})[0];
  EXPECT_FALSE(g.requires_grad());
}

TEST(Grad, AllowUnusedGivesUndefined) {
  Tensor a = leaf({1}, {1});
  Tensor unused = leaf({1}, {1});
  TensorList g = grad({ops::mul(a, 2.0)}, {a, unused}, GradArgs().allow_unused());
  expect_values(g[0], {2});
  EXPECT_FALSE(g[1].defined());
}

TEST(Grad, RepeatedInputGetsTheSameGradientTwice) {
  Tensor a = leaf({1}, {1});
  TensorList g = grad({ops::mul(a, 2.0)}, {a, a});
  expect_values(g[0], {2});
  expect_values(g[1], {2});
}

// Records the order in which nodes run.
class Logger final : public Node {
 public:
  Logger(std::vector<int>* log, int id, EdgeList edges)
      : Node(std::move(edges)), log_(log), id_(id) {
    add_input_metadata({{1}, DType::kFloat64, kCPU});
  }
  TensorList apply(TensorList&& grads, const Call&) override {
    log_->push_back(id_);
    return TensorList(num_outputs(), grads[0]);
  }
  std::string name() const override { return "Logger"; }

 private:
  std::vector<int>* log_;
  int id_;
};

TEST(Engine, ReadyQueueRunsNewestNodeFirst) {
  // Two independent branches from one root: both become ready together; the one created last
  // (higher sequence_nr) must run first.
  Tensor x = leaf({1}, {1});
  std::vector<int> log;
  auto branch1 = std::make_shared<Logger>(&log, 1, EdgeList{gradient_edge(x)});
  auto branch2 = std::make_shared<Logger>(&log, 2, EdgeList{gradient_edge(x)});
  auto root = std::make_shared<Logger>(&log, 0, EdgeList{{branch1, 0}, {branch2, 0}});
  Tensor y = ops::ones({1}, DType::kFloat64);
  y.impl()->requires_grad = true;
  y.impl()->grad_fn = root;
  backward(y);
  EXPECT_EQ(log, (std::vector<int>{0, 2, 1}));
  expect_values(x.grad(), {2});
}

TEST(Engine, SharedSubgraphRunsOnceAfterAllParents) {
  Tensor x = leaf({2}, {1});
  Tensor h = ops::mul(x, x);                              // runs once
  Tensor y = ops::add(ops::mul(h, 3.0), ops::mul(h, h));  // 3h + h^2
  reset_counters();
  Tensor g = grad({y}, {x})[0];
  expect_values(g, {(3 + 2 * 4) * 4});      // (3 + 2h) * 2x
  EXPECT_EQ(counters().nodes_executed, 4);  // add, mul_scalar, mul(h,h), mul(x,x)
}

TEST(Engine, Float32Gradients) {
  Tensor a = ops::from_vector({1, 2}, {2}, DType::kFloat32);
  a.set_requires_grad(true);
  Tensor g = grad({ops::sum(ops::mul(a, a))}, {a})[0];
  EXPECT_EQ(g.dtype(), DType::kFloat32);
  expect_values(g, {2, 4});
}

// Note [Summing gradients in place]: without create_graph, two gradients that meet are summed
// into one of them when nobody else holds it, as PyTorch's InputBuffer does; under create_graph,
// or when a gradient is held elsewhere, into a new tensor, and a held gradient keeps its values.
// z = sum(Scale2(u) + Scale3(u)), u = Probe(x): Probe's backward sees the sum of the gradients
// that Scale2 and Scale3 return, and where it lives.
namespace summing {
struct Seen {
  std::vector<const void*> returned;  // the data of each gradient Scale2 and Scale3 returned
  TensorList kept;                    // those gradients, when the test asks to keep them
  bool keep = false;
  const void* sum_data = nullptr;  // where Probe's incoming gradient lives
  std::vector<double> sum;
};
thread_local Seen seen;

template <int kScale>
struct Scale : Function<Scale<kScale>> {
  static constexpr const char* name = kScale == 2 ? "Scale2" : "Scale3";
  static TensorList forward(ForwardCtx&, const TensorList& in) { return {ops::mul(in[0], kScale)}; }
  static TensorList backward(BackwardCtx&, const TensorList& g) {
    Tensor out = ops::mul(g[0], kScale);
    seen.returned.push_back(out.raw_data());
    if (seen.keep) seen.kept.push_back(out);
    return {out};
  }
};
struct Probe : Function<Probe> {
  static constexpr const char* name = "Probe";
  static TensorList forward(ForwardCtx&, const TensorList& in) { return {ops::mul(in[0], 1.0)}; }
  static TensorList backward(BackwardCtx&, const TensorList& g) {
    seen.sum_data = g[0].raw_data();
    seen.sum = g[0].to_vector();
    return {g[0]};
  }
};
}  // namespace summing

TEST(Autograd, GradientsMeetingAtANodeAreSummedInPlaceOnlyWhenNobodyElseHoldsThem) {
  using summing::seen;
  struct Case {
    bool create_graph, keep, in_place;
  };
  for (const Case& c :
       {Case{false, false, true}, Case{true, false, false}, Case{false, true, false}}) {
    seen = {};
    seen.keep = c.keep;
    Tensor x = leaf({1, 2, 3, 4}, {4});
    const Tensor u = summing::Probe::apply({x})[0];
    const Tensor z =
        ops::sum(ops::add(summing::Scale<2>::apply({u})[0], summing::Scale<3>::apply({u})[0]));
    const Tensor gx = grad({z}, {x}, GradArgs().create_graph(c.create_graph))[0];
    expect_values(gx, {5, 5, 5, 5});
    EXPECT_EQ(seen.sum, (std::vector<double>{5, 5, 5, 5}));
    ASSERT_EQ(seen.returned.size(), 2u);
    const bool into_a_returned_gradient =
        seen.sum_data == seen.returned[0] || seen.sum_data == seen.returned[1];
    EXPECT_EQ(into_a_returned_gradient, c.in_place)
        << "create_graph=" << c.create_graph << " keep=" << c.keep;
    for (const Tensor& kept : seen.kept) {
      const double scale = kept.to_vector()[0];
      EXPECT_TRUE(scale == 2 || scale == 3) << scale;
      expect_values(kept, std::vector<double>(4, scale));
    }
  }
}

}  // namespace
}  // namespace ag
