#include "engine/jit/ir.h"

#include <gtest/gtest.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "engine/jit/ir_parser.h"
#include "engine/jit/verifier.h"

namespace ag::jit {
namespace {

const char* kExample = R"IR(graph(%x : Tensor, %y : Tensor):
  %t : Tensor = aten::transpose[dim0=0, dim1=1](%x)
  %c : float = prim::Constant[value=0.5]()
  %s : Tensor = aten::mul_scalar[scalar=0.5](%t)
  %l : Tensor[] = prim::ListConstruct(%s, %y)
  %a : Tensor, %b : Tensor = prim::ListUnpack(%l)
  %w : Tensor = aten::add_(%a, %b)
  %r : Tensor = aten::reshape[shape=[6]](%w)
  prim::Print(%r)
  %g : Tensor = prim::DifferentiableGraph(%r, %y) {
    graph(%p : Tensor, %q : Tensor):
      %e : Tensor = aten::tanh(%p)
      %f : Tensor = aten::sum(%q)
      %h : Tensor = aten::add(%e, %f)
      return (%h)
  }
  return (%g, %l)
)IR";

// Parses `text` and returns the IrError message (empty if it parsed).
std::string parseError(const std::string& text) {
  try {
    parseGraph(text);
  } catch (const IrError& e) {
    return e.what();
  }
  return "";
}

TEST(IrTest, PrintParseRoundTrip) {
  auto g = parseGraph(kExample);
  EXPECT_EQ(toString(*g), kExample);
  EXPECT_EQ(g->numNodes(), 9u);
  EXPECT_EQ(g->inputs().size(), 2u);
  EXPECT_EQ(g->outputs().size(), 2u);
  // A second trip changes nothing either.
  EXPECT_EQ(toString(*parseGraph(toString(*g))), kExample);
}

TEST(IrTest, CopyIsDeepAndPrintsTheSame) {
  auto g = parseGraph(kExample);
  auto c = g->copy();
  EXPECT_EQ(toString(*c), toString(*g));
  EXPECT_NE(c->nodes().back()->subgraph(), g->nodes().back()->subgraph());
  verify(*c);
}

TEST(IrTest, FloatAttributesRoundTripExactly) {
  const char* text = R"IR(graph():
  %c : float = prim::Constant[value=0.10000000000000001]()
  %d : float = prim::Constant[value=-3.0]()
  %e : float = prim::Constant[value=1e-300]()
  return (%c, %d, %e)
)IR";
  auto g = parseGraph(text);
  EXPECT_EQ(toString(*g), text);
  EXPECT_EQ(g->nodes()[0]->floatAttr("value"), 0.1);
}

TEST(IrTest, BuilderApiProducesVerifiableGraph) {
  Graph g;
  Value* x = g.addInput(Type::Tensor, "x");
  Node* t = g.append("aten::transpose", {x}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
  Node* u = g.append("aten::relu", {t->output()});
  g.registerOutput(u->output());
  verify(g);
  EXPECT_TRUE(t->isBefore(u));
  EXPECT_EQ(x->uses().size(), 1u);
  u->moveBefore(t);  // now uses %t before its definition
  EXPECT_THROW(verify(g), IrError);
}

TEST(IrTest, ManyInsertionsInOneGapKeepOrder) {
  Graph g;
  Value* x = g.addInput(Type::Tensor, "x");
  Node* first = g.append("aten::neg", {x});
  Node* last = g.append("aten::neg", {x});
  Node* anchor = last;
  for (int i = 0; i < 200; ++i) {  // forces renumbering of positions
    Node* n = g.create("aten::neg", {x});
    n->insertBefore(anchor);
    anchor = n;
  }
  Node* prev = nullptr;
  for (Node* n : g.nodes()) {
    if (prev != nullptr) {
      EXPECT_TRUE(prev->isBefore(n));
    }
    prev = n;
  }
  EXPECT_TRUE(first->isBefore(last));
  verify(g);
}

// Note [Value names]: numbers and other names share one namespace per graph.
TEST(IrTest, NumericAndOtherNamesStayUniquePerGraph) {
  Graph g;
  Value* x = g.addInput(Type::Tensor, "x");
  Value* a = g.append("aten::neg", {x})->output();
  Value* b = g.append("aten::neg", {x})->output();
  EXPECT_EQ(a->name(), "1");  // fresh numbers count every value made (%x was 0 before its name)
  EXPECT_EQ(b->name(), "2");
  EXPECT_FALSE(g.isNameFree("1"));
  EXPECT_TRUE(g.isNameFree("0"));
  EXPECT_TRUE(g.isNameFree("01"));  // not the number 1: a name of its own
  EXPECT_THROW(g.setName(b, "1"), IrError);
  EXPECT_EQ(b->name(), "2");  // a rejected rename changes nothing
  g.setName(b, "01");
  EXPECT_EQ(b->name(), "01");
  EXPECT_TRUE(g.isNameFree("2"));
  g.setName(a, "x7");
  g.setName(b, "1");  // freed by the rename of %a
  EXPECT_EQ(b->name(), "1");
  EXPECT_THROW(g.setName(a, "x"), IrError);
  // Names far beyond the fresh numbers, and fresh numbers stepping over taken ones.
  g.setName(a, "99999999999999");
  EXPECT_FALSE(g.isNameFree("99999999999999"));
  g.setName(x, "3");
  g.setName(a, "4");
  EXPECT_TRUE(g.isNameFree("99999999999999"));
  Value* c = g.append("aten::neg", {x})->output();
  EXPECT_EQ(c->name(), "5");  // 3 and 4 are taken
  c->node()->destroy();
  EXPECT_TRUE(g.isNameFree("5"));
  g.setName(a, "5");
  EXPECT_EQ(a->name(), "5");
  // The parser keeps numeric names, and they survive a round trip.
  const char* text = R"IR(graph(%7 : Tensor):
  %123456789012 : Tensor = aten::neg(%7)
  %2 : Tensor = aten::neg(%123456789012)
  return (%2)
)IR";
  EXPECT_EQ(toString(*parseGraph(text)), text);
}

// Note [Value ids]: unique across a graph and its subgraphs, also for a subgraph built apart.
TEST(IrTest, ValueIdsAreUniqueAcrossSubgraphs) {
  auto g = parseGraph(kExample);
  auto c = g->copy();
  for (const Graph* graph : {g.get(), c.get()}) {
    std::vector<const Value*> all;
    std::vector<const Graph*> todo{graph};
    while (!todo.empty()) {
      const Graph* cur = todo.back();
      todo.pop_back();
      all.insert(all.end(), cur->inputs().begin(), cur->inputs().end());
      for (Node* n : cur->nodes()) {
        all.insert(all.end(), n->outputs().begin(), n->outputs().end());
        if (n->subgraph() != nullptr) todo.push_back(n->subgraph());
      }
    }
    std::vector<bool> seen(graph->valueIdBound(), false);
    for (const Value* v : all) {
      ASSERT_LT(v->id(), graph->valueIdBound()) << "%" << v->name();
      EXPECT_FALSE(seen[v->id()]) << "%" << v->name() << " shares id " << v->id();
      seen[v->id()] = true;
    }
    EXPECT_EQ(all.size(), 16u);  // 2 inputs, 9 node outputs, 5 values in the subgraph
  }
}

// Node::moveToGraph (Note [Merging by moving]): the same node and values, ids kept, names kept
// where free; misuse throws and changes nothing.
TEST(IrTest, MoveToGraphTakesTheNodeItselfIntoASubgraph) {
  Graph g;
  Value* x = g.addInput(Type::Tensor, "x");
  Node* tanh = g.append("aten::tanh", {x});
  g.setName(tanh->output(), "t");
  Node* neg = g.append("aten::neg", {x});
  g.setName(neg->output(), "p");
  Node* group = g.create(kinds::kDifferentiableGraph, {}, 0);
  group->setSubgraph(std::make_unique<Graph>());
  g.appendNode(group);
  Graph* sub = group->subgraph();
  Value* p = sub->addInput(Type::Tensor, "p");  // holds the name of the value %p
  const size_t t_id = tanh->output()->id();
  const size_t p_id = neg->output()->id();

  tanh->moveToGraph(sub->returnNode(), {p});
  EXPECT_EQ(tanh->owningGraph(), sub);
  EXPECT_EQ(tanh->input(0), p);
  EXPECT_EQ(tanh->output()->id(), t_id);
  EXPECT_EQ(tanh->output()->name(), "t");
  EXPECT_TRUE(g.isNameFree("t"));
  for (const Use& u : x->uses()) EXPECT_NE(u.user, tanh);
  ASSERT_EQ(p->uses().size(), 1u);
  EXPECT_EQ(p->uses()[0].user, tanh);
  EXPECT_EQ(g.numNodes(), 2u);
  EXPECT_EQ(sub->numNodes(), 1u);

  // %p is taken in the subgraph: the moved output gets a fresh number there.
  neg->moveToGraph(tanh, {p});
  EXPECT_EQ(neg->output()->id(), p_id);
  EXPECT_EQ(neg->output()->name(), "1");  // 0 went to %p before its name
  EXPECT_TRUE(g.isNameFree("p"));
  EXPECT_EQ(sub->firstNode(), neg);
  sub->registerOutput(tanh->output());
  sub->registerOutput(neg->output());
  group->addInput(x);  // what %p stands for
  group->addOutput(Type::Tensor);
  group->addOutput(Type::Tensor);
  verify(*sub);
  verify(g);

  // Misuse: a graph of another id space, an output still in use, a wrong input count.
  Graph apart;
  Value* y = apart.addInput(Type::Tensor, "y");
  Node* relu = g.append("aten::relu", {x});
  EXPECT_THROW(relu->moveToGraph(apart.returnNode(), {y}), IrError);
  g.registerOutput(relu->output());
  EXPECT_THROW(relu->moveToGraph(sub->returnNode(), {p}), IrError);
  Node* exp = g.append("aten::exp", {x});
  EXPECT_THROW(exp->moveToGraph(sub->returnNode(), {}), IrError);
  EXPECT_THROW(exp->moveToGraph(sub->returnNode(), {x}), IrError);  // an input of `g`
  EXPECT_EQ(exp->owningGraph(), &g);
  EXPECT_EQ(exp->input(0), x);
  EXPECT_EQ(relu->owningGraph(), &g);
  verify(g);
}

// Note [Node kinds]: nodes of one kind share one copy of its text, known op or not.
TEST(IrTest, NodeKindsAreShared) {
  Graph g;
  Value* x = g.addInput(Type::Tensor, "x");
  Node* a = g.append("aten::tanh", {x});
  Node* b = g.append("aten::tanh", {x});
  EXPECT_EQ(&a->kind(), &b->kind());
  EXPECT_EQ(a->kind(), "aten::tanh");
  Node* u = g.create("my::unknown_op", {x}, 1);
  Node* v = g.create("my::unknown_op", {x}, 1);
  EXPECT_EQ(&u->kind(), &v->kind());
  EXPECT_EQ(u->kind(), "my::unknown_op");
  EXPECT_EQ(u->schema(), nullptr);
  EXPECT_EQ(&g.paramNode()->kind(), &Graph().paramNode()->kind());
  u->destroy();
  v->destroy();
}

// Note [IR memory layout]: lists past their inline capacity move to the heap and keep their order.
TEST(IrTest, SmallVectorGrowsPastItsInlineCapacity) {
  SmallVector<int, 2> v;
  EXPECT_EQ(v.capacity(), 2u);
  for (int i = 0; i < 9; ++i) v.push_back(i * 10);
  ASSERT_EQ(v.size(), 9u);
  EXPECT_GE(v.capacity(), 9u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(v[static_cast<size_t>(i)], i * 10);
  v.erase(v.begin() + 3);
  ASSERT_EQ(v.size(), 8u);
  EXPECT_EQ(v[2], 20);
  EXPECT_EQ(v[3], 40);
  EXPECT_EQ(v.back(), 80);
  EXPECT_THROW(v.at(8), std::out_of_range);
  v.pop_back();
  EXPECT_EQ(v.back(), 70);
  v.clear();
  EXPECT_TRUE(v.empty());
  // A node with many inputs, and a value with many uses, past the inline two and one.
  Graph g;
  Value* x = g.addInput(Type::Tensor, "x");
  std::vector<Value*> many(7, x);
  Node* list = g.append(kinds::kListConstruct, many);
  EXPECT_EQ(list->inputs().size(), 7u);
  EXPECT_EQ(x->uses().size(), 7u);
  list->removeInput(2);
  for (size_t i = 0; i < list->inputs().size(); ++i) {
    EXPECT_EQ(x->uses()[i].user, list);
  }
  std::vector<bool> offsets(6, false);
  for (const Use& u : x->uses()) offsets.at(u.offset) = true;
  EXPECT_EQ(offsets, std::vector<bool>(6, true));
  verify(g);
}

// Note [IR memory layout]: every node starts on a cache line, wherever the pool carves it (after
// values of any count, across chunk boundaries, in a subgraph, from the free list).
TEST(IrTest, NodesStartOnACacheLine) {
  auto on_a_line = [](const Node* n) { return reinterpret_cast<uintptr_t>(n) % 64 == 0; };
  Graph g;
  Value* h = g.addInput(Type::Tensor, "x");
  constexpr int kAppended = 3000;  // several chunks of the pool; a third with a ListConstruct
  for (int i = 0; i < kAppended; ++i) {
    Node* n = i % 3 == 0 ? g.append("prim::ListUnpack",
                                    {g.append("prim::ListConstruct", {h})->output()}, {}, i % 5 + 1)
                         : g.append("aten::tanh", {h});
    h = n->output();
    EXPECT_TRUE(on_a_line(n)) << "node " << i;
  }
  Node* group = g.create("prim::DifferentiableGraph", {}, 0);
  group->setSubgraph(g.newSubgraph());
  g.appendNode(group);
  EXPECT_TRUE(on_a_line(group));
  EXPECT_TRUE(on_a_line(group->subgraph()->paramNode()));
  EXPECT_TRUE(on_a_line(group->subgraph()->returnNode()));
  Node* last = g.lastNode();
  last->destroy();
  EXPECT_TRUE(on_a_line(g.append("aten::neg", {g.inputs()[0]})));  // the released block
  EXPECT_EQ(g.numNodes(), size_t{kAppended + kAppended / 3 + 1});
}

#if defined(__SANITIZE_ADDRESS__)
// IrPool poisons what a destroyed node or value leaves, so AddressSanitizer still sees a use of it.
TEST(IrTest, DestroyedNodesStayVisibleToAddressSanitizer) {
  Graph g;
  Value* x = g.addInput(Type::Tensor, "x");
  Node* n = g.append("aten::tanh", {x});
  const char* node_memory = reinterpret_cast<const char*>(n);
  const char* value_memory = reinterpret_cast<const char*>(n->output());
  n->destroy();
  EXPECT_TRUE(__asan_address_is_poisoned(node_memory + 2 * sizeof(void*)));
  EXPECT_TRUE(__asan_address_is_poisoned(value_memory + 2 * sizeof(void*)));
  Node* again = g.append("aten::tanh", {x});  // takes the released block back
  EXPECT_EQ(reinterpret_cast<const char*>(again), node_memory);
  EXPECT_FALSE(__asan_address_is_poisoned(node_memory + 2 * sizeof(void*)));
}
#endif

TEST(IrTest, VerifierRejectsUseBeforeDef) {
  std::string err = parseError(R"IR(graph(%x : Tensor):
  %a : Tensor = aten::neg(%b)
  %b : Tensor = aten::neg(%x)
  return (%a)
)IR");
  EXPECT_NE(err.find("line 2"), std::string::npos) << err;
  EXPECT_NE(err.find("undefined value %b"), std::string::npos) << err;
}

TEST(IrTest, VerifierRejectsWrongArity) {
  std::string err = parseError(R"IR(graph(%x : Tensor):
  %a : Tensor = aten::add(%x)
  return (%a)
)IR");
  EXPECT_NE(err.find("wrong arity"), std::string::npos) << err;
  EXPECT_NE(err.find("aten::add takes 2 inputs, got 1"), std::string::npos) << err;

  err = parseError(R"IR(graph(%x : Tensor):
  %a : Tensor, %b : Tensor = aten::neg(%x)
  return (%a)
)IR");
  EXPECT_NE(err.find("takes 1 outputs, got 2"), std::string::npos) << err;
}

TEST(IrTest, VerifierRejectsUnknownOp) {
  std::string err = parseError(R"IR(graph(%x : Tensor):
  %a : Tensor = aten::frobnicate(%x)
  return (%a)
)IR");
  EXPECT_NE(err.find("unknown op 'aten::frobnicate'"), std::string::npos) << err;

  Graph g;  // the same through the builder API
  Value* x = g.addInput(Type::Tensor, "x");
  g.append("aten::frobnicate", {x}, {}, 1);
  try {
    verify(g);
    FAIL() << "verify accepted an unknown op";
  } catch (const IrError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown op"), std::string::npos) << e.what();
  }
}

TEST(IrTest, VerifierRejectsTypeMismatch) {
  std::string err = parseError(R"IR(graph(%x : Tensor):
  %l : Tensor[] = prim::ListConstruct(%x)
  %a : Tensor = aten::neg(%l)
  return (%a)
)IR");
  EXPECT_NE(err.find("type mismatch"), std::string::npos) << err;
  EXPECT_NE(err.find("got Tensor[] (%l)"), std::string::npos) << err;

  err = parseError(R"IR(graph(%x : Tensor):
  %a : float = aten::neg(%x)
  return (%a)
)IR");
  EXPECT_NE(err.find("type mismatch"), std::string::npos) << err;
}

TEST(IrTest, VerifierRejectsBadAttributes) {
  EXPECT_NE(parseError(
                "graph(%x : Tensor):\n  %a : Tensor = aten::transpose[dim0=0](%x)\n  return (%a)\n")
                .find("needs attribute 'dim1'"),
            std::string::npos);
  EXPECT_NE(
      parseError(
          "graph(%x : Tensor):\n  %a : Tensor = aten::reshape[shape=2.5](%x)\n  return (%a)\n")
          .find("must be of kind int[]"),
      std::string::npos);
}

TEST(IrTest, VerifierRejectsBadSubgraphSignature) {
  std::string err = parseError(R"IR(graph(%x : Tensor):
  %g : Tensor = prim::DifferentiableGraph(%x) {
    graph(%p : Tensor, %q : Tensor):
      return (%p)
  }
  return (%g)
)IR");
  EXPECT_NE(err.find("subgraph has 2 inputs"), std::string::npos) << err;
}

TEST(IrTest, ParserReportsSyntaxErrorsWithLines) {
  EXPECT_NE(parseError("graph(%x : Tensor):\n  %a : Tensor = aten::neg(%x\n  return (%a)\n")
                .find("line 3"),
            std::string::npos);
  EXPECT_NE(parseError("graph(%x : Tensr):\n  return (%x)\n").find("unknown type 'Tensr'"),
            std::string::npos);
  EXPECT_NE(parseError("graph(%x : Tensor):\n  %x : Tensor = aten::neg(%x)\n  return (%x)\n")
                .find("redefinition of value %x"),
            std::string::npos);
  EXPECT_NE(
      parseError("graph(%x : Tensor):\n  %a : Tensor = aten::neg(%x)\n").find("missing 'return"),
      std::string::npos);
  EXPECT_NE(parseError("graph(%x : Tensor):\n  return (%x)\n  junk\n").find("end of input"),
            std::string::npos);
  EXPECT_NE(parseError("graph(%x : Tensor) $").find("unexpected character"), std::string::npos);
  EXPECT_NE(parseError("").find("expected 'graph'"), std::string::npos);
}

}  // namespace
}  // namespace ag::jit
