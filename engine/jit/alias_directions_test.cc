// AliasDb's relations in the direction a swapped relation would break (Note [Alias semantics of
// ops], alias_db.h): a list holding a view of what another list holds, asked both ways round; a
// consumer of one list reading what escaped into another; a write through an unpacked value
// reaching the base of a view that escaped. And every answer checked against the storage the
// values share when the graph runs: what shares storage at run time may alias, whichever value is
// asked first.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <variant>

#include "engine/jit/alias_db.h"
#include "engine/jit/alias_test_util.h"
#include "engine/jit/executor.h"
#include "ops/ops.h"

namespace ag::jit {
namespace {

// l1 holds a view of x, l2 holds x itself, l3 holds y; z never enters a list.
const char* const kLists = R"IR(graph(%x : Tensor, %y : Tensor, %z : Tensor):
  %t : Tensor = aten::reshape[shape=[6]](%x)
  %l1 : Tensor[] = prim::ListConstruct(%t)
  %l2 : Tensor[] = prim::ListConstruct(%x)
  %l3 : Tensor[] = prim::ListConstruct(%y)
  %m : Tensor = aten::mul(%z, %z)
  return (%l1, %l2, %l3, %m)
)IR";

TEST(AliasDirections, AListHoldingAViewOfWhatAnotherListHoldsMayContainAliasBothWays) {
  Named g(kLists);
  AliasDb db(*g.graph);
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"l1", "l2"}, {"l1", "x"}, {"l2", "t"}, {"l1", "t"}, {"l2", "x"}, {"l1", "l3"}}) {
    EXPECT_TRUE(db.mayContainAlias(g.v(a), g.v(b))) << a << " ~ " << b;
    EXPECT_TRUE(db.mayContainAlias(g.v(b), g.v(a))) << b << " ~ " << a;
  }
  for (const char* list : {"l1", "l2", "l3"}) {
    for (const char* fresh : {"z", "m"}) {
      EXPECT_FALSE(db.mayContainAlias(g.v(list), g.v(fresh))) << list << " ~ " << fresh;
      EXPECT_FALSE(db.mayContainAlias(g.v(fresh), g.v(list))) << fresh << " ~ " << list;
    }
    // The list object is fresh: it is not the tensors it holds.
    EXPECT_FALSE(db.mayAlias(g.v(list), g.v("x"))) << list;
    EXPECT_FALSE(db.mayAlias(g.v("x"), g.v(list))) << list;
  }
  // Everything that entered a list may be anything else that did, both ways round.
  EXPECT_TRUE(db.mayAlias(g.v("x"), g.v("y")));
  EXPECT_TRUE(db.mayAlias(g.v("y"), g.v("x")));
  EXPECT_FALSE(db.mayAlias(g.v("z"), g.v("y")));
  EXPECT_FALSE(db.mayAlias(g.v("y"), g.v("z")));
}

// u is unpacked from l2, which only y entered; x entered l1 through its view t. A consumer of l2
// may read x, and a write to u may write x and t: what escaped into any list.
const char* const kConsumers = R"IR(graph(%x : Tensor, %y : Tensor, %z : Tensor):
  %t : Tensor = aten::reshape[shape=[6]](%x)
  %l1 : Tensor[] = prim::ListConstruct(%t)
  %l2 : Tensor[] = prim::ListConstruct(%y)
  %u : Tensor = prim::ListUnpack(%l2)
  %r : Tensor = aten::mul(%u, %z)
  %w : Tensor = aten::mul_(%u, %z)
  return (%r, %w, %l1)
)IR";

TEST(AliasDirections, AConsumerOfAnyListReadsWhatEscapedIntoEveryList) {
  Named g(kConsumers);
  AliasDb db(*g.graph);
  for (const char* escaped : {"x", "t", "y"}) {
    EXPECT_TRUE(db.readsFromAlias(g.node("u"), g.v(escaped))) << "ListUnpack reads " << escaped;
    EXPECT_TRUE(db.readsFromAlias(g.node("r"), g.v(escaped))) << "mul(u, z) reads " << escaped;
    EXPECT_TRUE(db.writesToAlias(g.node("w"), g.v(escaped))) << "mul_(u, z) writes " << escaped;
    EXPECT_TRUE(db.hasWriters(g.v(escaped))) << escaped;
    EXPECT_TRUE(db.mayAlias(g.v("u"), g.v(escaped))) << escaped;
    EXPECT_TRUE(db.mayAlias(g.v(escaped), g.v("u"))) << escaped;
  }
  EXPECT_TRUE(db.readsFromAlias(g.node("l1"), g.v("x")));  // a list's construction reads it
  EXPECT_FALSE(db.readsFromAlias(g.node("u"), g.v("z")));
  EXPECT_TRUE(db.readsFromAlias(g.node("r"), g.v("z")));
  EXPECT_FALSE(db.writesToAlias(g.node("w"), g.v("z")));
  EXPECT_FALSE(db.writesToAlias(g.node("r"), g.v("x")));
  EXPECT_FALSE(db.hasWriters(g.v("z")));
  EXPECT_FALSE(db.mayAlias(g.v("u"), g.v("z")));
  EXPECT_FALSE(db.mayAlias(g.v("z"), g.v("u")));
}

// The storages a run-time value refers to: a tensor's, or those of a list's tensors.
std::set<const void*> storagesOf(const IValue& v) {
  std::set<const void*> out;
  if (const Tensor* t = std::get_if<Tensor>(&v)) {
    if (t->defined()) out.insert(t->impl()->storage.get());
  } else if (const TensorList* l = std::get_if<TensorList>(&v)) {
    for (const Tensor& t : *l) {
      if (t.defined()) out.insert(t.impl()->storage.get());
    }
  }
  return out;
}

bool intersect(const std::set<const void*>& a, const std::set<const void*>& b) {
  for (const void* p : a) {
    if (b.count(p)) return true;
  }
  return false;
}

// Runs the graph and checks, for every pair of inputs and outputs in both orders, that values
// whose storages meet at run time may contain aliases, and that tensors that share storage may
// alias. Returns the number of sharing pairs seen (the test must see some).
int checkAgainstRunTime(const std::string& text, const std::vector<IValue>& inputs) {
  Named g(text);
  AliasDb db(*g.graph);
  const std::vector<IValue> outputs = GraphExecutor(*g.graph).run(inputs);
  std::vector<std::pair<const Value*, IValue>> seen;
  for (size_t i = 0; i < inputs.size(); ++i) seen.emplace_back(g.graph->inputs()[i], inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i) seen.emplace_back(g.graph->outputs()[i], outputs[i]);
  int sharing = 0;
  for (const auto& [va, a] : seen) {
    for (const auto& [vb, b] : seen) {
      if (va == vb) continue;
      if (!intersect(storagesOf(a), storagesOf(b))) continue;
      ++sharing;
      EXPECT_TRUE(db.mayContainAlias(va, vb))
          << "%" << va->name() << " and %" << vb->name()
          << " share storage but AliasDb says they contain no alias";
      if (std::holds_alternative<Tensor>(a) && std::holds_alternative<Tensor>(b)) {
        EXPECT_TRUE(db.mayAlias(va, vb)) << "%" << va->name() << " and %" << vb->name()
                                         << " share storage but AliasDb says they cannot alias";
      }
    }
  }
  return sharing;
}

TEST(AliasDirections, WhatSharesStorageAtRunTimeMayAliasAskedEitherWay) {
  const std::vector<IValue> in = {ops::uniform({2, 3}, -1, 1, 1, DType::kFloat64),
                                  ops::uniform({2, 3}, -1, 1, 2, DType::kFloat64),
                                  ops::uniform({6}, -1, 1, 3, DType::kFloat64)};
  // Lists holding views of each other's tensors, unpacked values, a view of an unpacked value,
  // and values that share nothing.
  EXPECT_GT(checkAgainstRunTime(R"IR(graph(%x : Tensor, %y : Tensor, %z : Tensor):
  %t : Tensor = aten::reshape[shape=[6]](%x)
  %l1 : Tensor[] = prim::ListConstruct(%t, %z)
  %l2 : Tensor[] = prim::ListConstruct(%x)
  %a : Tensor, %b : Tensor = prim::ListUnpack(%l1)
  %s : Tensor = aten::reshape[shape=[2, 3]](%b)
  %l3 : Tensor[] = prim::ListConstruct(%s, %y)
  %m : Tensor = aten::mul(%y, %y)
  return (%l1, %l2, %a, %b, %t, %s, %l3, %m)
)IR",
                                in),
            10);
}

}  // namespace
}  // namespace ag::jit
