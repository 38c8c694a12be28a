#include "engine/node.h"

#include <gtest/gtest.h>

#include "engine/accumulate_grad.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/tests/test_util.h"
#include "ops/ops.h"

namespace ag {
namespace {

using testing::leaf;

// A node with no behaviour, to build graphs by hand.
class Dummy final : public Node {
 public:
  explicit Dummy(EdgeList edges = {}) : Node(std::move(edges)) {}
  TensorList apply(TensorList&&, const Call&) override { return TensorList(num_outputs()); }
  std::string name() const override { return "Dummy"; }
};

TEST(Node, SequenceNumbersIncreaseWithCreation) {
  auto a = std::make_shared<Dummy>();
  auto b = std::make_shared<Dummy>();
  EXPECT_LT(a->sequence_nr(), b->sequence_nr());
}

TEST(Node, TopologicalNumberIsLongestPathToALeaf) {
  Tensor x = leaf({1}, {1});
  Tensor y = leaf({2}, {1});
  auto acc = grad_accumulator(x);
  EXPECT_EQ(acc->topological_nr(), 0u);
  Tensor a = ops::mul(x, y);  // children: two AccumulateGrad -> 1
  Tensor b = ops::neg(a);     // 2
  Tensor c = ops::add(b, x);  // max(2, 0) + 1 = 3
  Tensor d = ops::add(c, a);  // max(3, 1) + 1 = 4
  EXPECT_EQ(a.grad_fn()->topological_nr(), 1u);
  EXPECT_EQ(b.grad_fn()->topological_nr(), 2u);
  EXPECT_EQ(c.grad_fn()->topological_nr(), 3u);
  EXPECT_EQ(d.grad_fn()->topological_nr(), 4u);
}

TEST(Node, TopologicalNumberIsFrozenOnceParented) {
  auto leaf_node = std::make_shared<Dummy>();
  auto child = std::make_shared<Dummy>();
  EXPECT_FALSE(child->has_parent());
  // Before anyone depends on it, a node may still change its edges.
  child->set_next_edges({{leaf_node, 0}});
  EXPECT_EQ(child->topological_nr(), 1u);
  auto parent = std::make_shared<Dummy>(EdgeList{{child, 0}});
  EXPECT_TRUE(child->has_parent());
  EXPECT_EQ(parent->topological_nr(), 2u);
  auto deeper = std::make_shared<Dummy>(EdgeList{{leaf_node, 0}});
  auto deeper2 = std::make_shared<Dummy>(EdgeList{{deeper, 0}});
  try {
    child->set_next_edges({{deeper2, 0}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("frozen"), std::string::npos) << e.what();
  }
  EXPECT_EQ(child->topological_nr(), 1u);  // unchanged after the refused update
}

TEST(Node, ReachabilitySignatureContainsEveryReachableNode) {
  Tensor x = leaf({1}, {1});
  Tensor y = leaf({2}, {1});
  Tensor a = ops::mul(x, y);
  Tensor b = ops::neg(a);
  const Node& top = *b.grad_fn();
  for (const Node* n : {a.grad_fn().get(), static_cast<Node*>(grad_accumulator(x).get()),
                        static_cast<Node*>(grad_accumulator(y).get())}) {
    EXPECT_TRUE(top.reach_signature().contains(n->own_signature()));
  }
}

TEST(Node, GradAccumulatorIsSharedPerLeaf) {
  Tensor x = leaf({1}, {1});
  auto first = grad_accumulator(x);
  EXPECT_EQ(first, grad_accumulator(x));
  EXPECT_EQ(first->name(), "AccumulateGrad");
  Tensor y = ops::mul(x, x);
  EXPECT_EQ(y.grad_fn()->next_edge(0).function, first);
  EXPECT_EQ(y.grad_fn()->next_edge(1).function, first);
}

TEST(Node, NoGraphWithoutRequiresGradOrInNoGradMode) {
  Tensor x = leaf({1}, {1}, /*requires_grad=*/false);
  EXPECT_EQ(ops::mul(x, x).grad_fn(), nullptr);
  Tensor w = leaf({1}, {1});
  {
    NoGradGuard no_grad;
    Tensor y = ops::mul(w, w);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
  }
  EXPECT_TRUE(ops::mul(w, w).requires_grad());
}

}  // namespace
}  // namespace ag
