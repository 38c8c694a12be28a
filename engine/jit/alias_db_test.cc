#include "engine/jit/alias_db.h"

#include <gtest/gtest.h>

#include "engine/jit/alias_db_lint.h"
#include "engine/jit/alias_test_util.h"

namespace ag::jit {
namespace {

TEST(AliasDbTest, ValuesOfAnotherGraphAreNotTracked) {
  const char* text = R"IR(graph(%x : Tensor):
  %t : Tensor = aten::reshape[shape=[6]](%x)
  return (%t)
)IR";
  Named g(text);
  Named other(text);
  AliasDb db(*g.graph);
  ASSERT_EQ(other.v("t")->id(), g.v("t")->id());  // the db's table is indexed by id
  EXPECT_TRUE(db.isTracked(g.v("t")));
  EXPECT_FALSE(db.isTracked(other.v("t")));
  EXPECT_FALSE(db.mayAlias(other.v("t"), g.v("x")));
  EXPECT_TRUE(db.mayAlias(g.v("t"), g.v("x")));
  // A value of another graph takes no aliasing information: it would land in the slot of the
  // value with its id.
  EXPECT_THROW(db.copyValue(g.v("t"), other.v("t")), IrError);
  EXPECT_FALSE(db.isTracked(other.v("t")));
  EXPECT_TRUE(db.isTracked(g.v("t")));
}

TEST(AliasDbTest, ViewsAliasTheirBaseAndFreshValuesDoNot) {
  Named g(R"IR(graph(%x : Tensor, %y : Tensor):
  %t : Tensor = aten::reshape[shape=[6]](%x)
  %s : Tensor = aten::detach(%t)
  %m : Tensor = aten::mul(%t, %y)
  %c : float = prim::Constant[value=1.0]()
  return (%s, %m)
)IR");
  AliasDb db(*g.graph);
  EXPECT_TRUE(db.mayAlias(g.v("x"), g.v("t")));
  EXPECT_TRUE(db.mayAlias(g.v("x"), g.v("s")));   // a view of a view
  EXPECT_FALSE(db.mayAlias(g.v("x"), g.v("y")));  // graph inputs are distinct
  EXPECT_FALSE(db.mayAlias(g.v("m"), g.v("x")));
  EXPECT_FALSE(db.mayAlias(g.v("m"), g.v("t")));
  EXPECT_FALSE(db.isTracked(g.v("c")));  // immutable
  EXPECT_FALSE(db.mayAlias(g.v("c"), g.v("c")));
  EXPECT_FALSE(db.hasWriters(g.v("x")));
}

TEST(AliasDbTest, InPlaceOpsWriteEverythingThatAliases) {
  Named g(R"IR(graph(%x : Tensor, %y : Tensor):
  %t : Tensor = aten::reshape[shape=[6]](%x)
  %w : Tensor = aten::add_(%t, %y)
  %m : Tensor = aten::mul(%x, %y)
  return (%w, %m)
)IR");
  AliasDb db(*g.graph);
  EXPECT_TRUE(db.mayAlias(g.v("w"), g.v("x")));
  EXPECT_TRUE(db.hasWriters(g.v("x")));
  EXPECT_TRUE(db.hasWriters(g.v("t")));
  EXPECT_FALSE(db.hasWriters(g.v("y")));
  EXPECT_FALSE(db.hasWriters(g.v("m")));
  EXPECT_TRUE(db.writesToAlias(g.node("w"), g.v("x")));
  EXPECT_FALSE(db.writesToAlias(g.node("w"), g.v("y")));
  EXPECT_TRUE(db.readsFromAlias(g.node("w"), g.v("y")));
  EXPECT_TRUE(db.readsFromAlias(g.node("m"), g.v("t")));
}

TEST(AliasDbTest, ValuesEscapingIntoContainersBecomeWildcards) {
  Named g(R"IR(graph(%x : Tensor, %y : Tensor, %z : Tensor):
  %l1 : Tensor[] = prim::ListConstruct(%x)
  %l2 : Tensor[] = prim::ListConstruct(%y)
  %u : Tensor = prim::ListUnpack(%l2)
  %w : Tensor = aten::mul_(%u, %z)
  return (%w)
)IR");
  AliasDb db(*g.graph);
  // Anything that entered any list may be anything unpacked from any list.
  EXPECT_TRUE(db.mayAlias(g.v("x"), g.v("y")));
  EXPECT_TRUE(db.mayAlias(g.v("u"), g.v("x")));
  EXPECT_FALSE(db.mayAlias(g.v("z"), g.v("x")));
  EXPECT_FALSE(db.mayAlias(g.v("l1"), g.v("x")));  // the list object itself is fresh
  EXPECT_TRUE(db.mayContainAlias(g.v("l1"), g.v("x")));
  EXPECT_TRUE(db.mayContainAlias(g.v("l1"), g.v("u")));
  EXPECT_FALSE(db.mayContainAlias(g.v("l1"), g.v("z")));
  EXPECT_TRUE(db.hasWriters(g.v("x")));  // through the wildcard
  EXPECT_FALSE(db.hasWriters(g.v("z")));
}

TEST(AliasDbTest, DifferentiableGraphIsAnalysedThroughItsBody) {
  Named g(R"IR(graph(%x : Tensor, %y : Tensor):
  %a : Tensor, %b : Tensor = prim::DifferentiableGraph(%x, %y) {
    graph(%p : Tensor, %q : Tensor):
      %t : Tensor = aten::reshape[shape=[6]](%p)
      %m : Tensor = aten::mul(%t, %q)
      return (%t, %m)
  }
  return (%a, %b)
)IR");
  AliasDb db(*g.graph);
  EXPECT_TRUE(db.mayAlias(g.v("a"), g.v("x")));
  EXPECT_FALSE(db.mayAlias(g.v("b"), g.v("x")));
  EXPECT_FALSE(db.mayAlias(g.v("a"), g.v("b")));
  EXPECT_TRUE(db.readsFromAlias(g.node("a"), g.v("y")));
  EXPECT_TRUE(db.writes(g.node("a")).empty());
}

TEST(AliasDbTest, MoveRefusesToCrossAConflictingWrite) {
  Named g(R"IR(graph(%x : Tensor, %y : Tensor):
  %r : Tensor = aten::relu(%x)
  %w : Tensor = aten::add_(%x, %y)
  %m : Tensor = aten::mul(%r, %y)
  return (%m, %w)
)IR");
  AliasDb db(*g.graph);
  // relu(x) must read x before add_ writes it, so moving relu down to mul
  // carries add_ along to the far side of mul (mul reads neither x nor y's
  // writers, so that is allowed).
  std::string before = toString(*g.graph);
  EXPECT_TRUE(db.couldMoveBeforeTopologically(g.node("r"), g.node("m")));
  EXPECT_EQ(toString(*g.graph), before);  // a dry run moves nothing
  EXPECT_TRUE(db.moveBeforeTopologicallyValid(g.node("r"), g.node("m")));
  // relu stays ahead of the write, which was carried after mul.
  std::vector<Node*> order = g.graph->nodes();
  EXPECT_EQ(order[0], g.node("r"));
  EXPECT_EQ(order[1], g.node("m"));
  EXPECT_EQ(order[2], g.node("w"));
}

// The set being moved gathers what its nodes read only once a writer is crossed (Note [Reads
// gathered on demand]): a node dragged along after that first writer must have its reads
// gathered too, or the second writer below would slip in front of the first one's read of %y.
TEST(AliasDbTest, MoveDragsEveryWriterOfWhatTheDraggedNodesRead) {
  Named g(R"IR(graph(%x : Tensor, %y : Tensor, %z : Tensor):
  %r : Tensor = aten::relu(%x)
  %w : Tensor = aten::add_(%x, %y)
  %v : Tensor = aten::add_(%y, %z)
  %m : Tensor = aten::mul(%r, %z)
  return (%m, %w, %v)
)IR");
  AliasDb db(*g.graph);
  EXPECT_TRUE(db.moveBeforeTopologicallyValid(g.node("r"), g.node("m")));
  // add_(x, y) must follow relu's read of x, and add_(y, z) must follow add_(x, y)'s read of y:
  // both travel to the far side of mul, in their order.
  EXPECT_EQ(g.graph->nodes(),
            (std::vector<Node*>{g.node("r"), g.node("m"), g.node("w"), g.node("v")}));
}

TEST(AliasDbTest, MoveFailsWhenThePointDependsOnTheDraggedWrite) {
  Named g(R"IR(graph(%x : Tensor, %y : Tensor):
  %r : Tensor = aten::relu(%x)
  %w : Tensor = aten::add_(%x, %y)
  %m : Tensor = aten::mul(%x, %r)
  return (%m, %w)
)IR");
  AliasDb db(*g.graph);
  std::string before = toString(*g.graph);
  EXPECT_FALSE(db.moveBeforeTopologicallyValid(g.node("r"), g.node("m")));
  EXPECT_EQ(toString(*g.graph), before);
}

TEST(AliasDbTest, SideEffectsKeepTheirOrder) {
  Named g(R"IR(graph(%x : Tensor, %y : Tensor):
  prim::Print(%x)
  %n : Tensor = aten::neg(%y)
  prim::Print(%y)
  return (%n)
)IR");
  AliasDb db(*g.graph);
  std::vector<Node*> nodes = g.graph->nodes();
  EXPECT_FALSE(db.couldMoveAfterTopologically(nodes[0], nodes[2]));
  EXPECT_TRUE(db.couldMoveAfterTopologically(nodes[0], nodes[1]));
  EXPECT_FALSE(db.couldMoveBeforeTopologically(nodes[2], nodes[0]));
  // Backward move of neg over the first print is fine.
  EXPECT_TRUE(db.moveBeforeTopologicallyValid(nodes[1], nodes[0]));
  EXPECT_EQ(g.graph->firstNode(), nodes[1]);
}

TEST(AliasDbTest, BackwardMoveDragsDependencies) {
  Named g(R"IR(graph(%x : Tensor, %y : Tensor):
  %a : Tensor = aten::neg(%x)
  %b : Tensor = aten::exp(%y)
  %c : Tensor = aten::tanh(%b)
  %d : Tensor = aten::mul(%c, %y)
  return (%a, %d)
)IR");
  AliasDb db(*g.graph);
  // d needs c needs b: all three go before a, in order.
  EXPECT_TRUE(db.moveBeforeTopologicallyValid(g.node("d"), g.node("a")));
  std::vector<Node*> order = g.graph->nodes();
  EXPECT_EQ(order[0], g.node("b"));
  EXPECT_EQ(order[1], g.node("c"));
  EXPECT_EQ(order[2], g.node("d"));
  EXPECT_EQ(order[3], g.node("a"));
  // Moving b after d would drag c (a user of b) past d, which needs c.
  EXPECT_FALSE(db.moveAfterTopologicallyValid(g.node("b"), g.node("d")));
}

TEST(AliasDbTest, ReplaceWithNewValueCarriesAliasing) {
  Named g(R"IR(graph(%x : Tensor, %y : Tensor):
  %t : Tensor = aten::reshape[shape=[6]](%x)
  %w : Tensor = aten::add_(%x, %y)
  return (%t, %w)
)IR");
  AliasDb db(*g.graph);
  Node* t = g.node("t");
  Node* copy = g.graph->createClone(t, [](Value* v) { return v; });
  copy->insertAfter(t);
  t->output()->replaceAllUsesWith(copy->output());
  db.replaceWithNewValue(t->output(), copy->output());
  t->destroy();
  EXPECT_TRUE(db.mayAlias(copy->output(), g.v("x")));
  EXPECT_TRUE(db.hasWriters(copy->output()));
  AliasDb fresh(*g.graph);
  EXPECT_EQ(findAliasDbDifference(*g.graph, db, fresh), std::nullopt);
}

TEST(AliasDbTest, LintReportsADifference) {
  Named g(R"IR(graph(%x : Tensor):
  %t : Tensor = aten::reshape[shape=[6]](%x)
  return (%t)
)IR");
  AliasDb good(*g.graph);
  AliasDb stale(*g.graph);
  stale.forgetValue(g.v("t"));
  auto diff = findAliasDbDifference(*g.graph, good, stale);
  ASSERT_TRUE(diff.has_value());
  EXPECT_NE(diff->find("%t"), std::string::npos) << *diff;
}

}  // namespace
}  // namespace ag::jit
