#include "engine/jit/interpreter.h"

#include <gtest/gtest.h>

#include "engine/jit/ir_parser.h"

namespace ag::jit {
namespace {

RtTensor t23() { return RtTensor::fromData({2, 3}, {1, 2, 3, 4, 5, 6}); }

TEST(InterpreterTest, ViewsShareStorageWithTheirBase) {
  auto g = parseGraph(R"IR(graph(%x : Tensor, %y : Tensor):
  %t : Tensor = aten::transpose[dim0=0, dim1=1](%x)
  %s : Tensor = aten::select[dim=0, index=1](%t)
  %w : Tensor = aten::add_(%s, %y)
  return (%t, %w)
)IR");
  RtTensor x = t23();
  auto out = runGraph(*g, {x, RtTensor::fromData({}, {10})});
  // Column 1 of x (2 and 5) was incremented through the view of a view.
  EXPECT_EQ(toString(RtValue(x)), "tensor[2, 3]{1, 12, 3, 4, 15, 6}");
  EXPECT_EQ(toString(out[0]), "tensor[3, 2]{1, 4, 12, 15, 3, 6}");
  EXPECT_EQ(toString(out[1]), "tensor[2]{12, 15}");
  EXPECT_TRUE(std::get<RtTensor>(out[1]).sharesStorageWith(x));
}

TEST(InterpreterTest, ElementwiseOpsBroadcast) {
  auto g = parseGraph(R"IR(graph(%x : Tensor, %y : Tensor):
  %a : Tensor = aten::add(%x, %y)
  %m : Tensor = aten::mul(%x, %y)
  %s : Tensor = aten::sum(%a)
  %r : Tensor = aten::relu(%s)
  %c : float = prim::Constant[value=2.0]()
  %d : Tensor = aten::mul_scalar(%r, %c)
  return (%a, %m, %d)
)IR");
  auto out = runGraph(*g, {t23(), RtTensor::fromData({3}, {1, 0, -1})});
  EXPECT_EQ(toString(out[0]), "tensor[2, 3]{2, 2, 2, 5, 5, 5}");
  EXPECT_EQ(toString(out[1]), "tensor[2, 3]{1, 0, -3, 4, 0, -6}");
  EXPECT_EQ(toString(out[2]), "tensor[]{42}");
}

TEST(InterpreterTest, ListsHoldTheSameTensors) {
  auto g = parseGraph(R"IR(graph(%x : Tensor, %y : Tensor):
  %l : Tensor[] = prim::ListConstruct(%x, %y)
  %a : Tensor, %b : Tensor = prim::ListUnpack(%l)
  %w : Tensor = aten::mul_(%b, %a)
  %c : Tensor = aten::cat[dim=0](%l)
  prim::Print(%c)
  return (%c)
)IR");
  RtTensor y = RtTensor::fromData({1, 3}, {2, 2, 2});
  PrintLog log;
  auto out = runGraph(*g, {RtTensor::fromData({1, 3}, {1, 2, 3}), y}, &log);
  EXPECT_EQ(toString(RtValue(y)), "tensor[1, 3]{2, 4, 6}");
  EXPECT_EQ(toString(out[0]), "tensor[2, 3]{1, 2, 3, 2, 4, 6}");
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "tensor[2, 3]{1, 2, 3, 2, 4, 6}");
}

TEST(InterpreterTest, ReshapeIsAViewOnlyWhenContiguous) {
  auto g = parseGraph(R"IR(graph(%x : Tensor):
  %r : Tensor = aten::reshape[shape=[3, 2]](%x)
  %t : Tensor = aten::transpose[dim0=0, dim1=1](%x)
  %q : Tensor = aten::reshape[shape=[6]](%t)
  return (%r, %q)
)IR");
  RtTensor x = t23();
  auto out = runGraph(*g, {x});
  EXPECT_TRUE(std::get<RtTensor>(out[0]).sharesStorageWith(x));
  EXPECT_FALSE(std::get<RtTensor>(out[1]).sharesStorageWith(x));
  EXPECT_EQ(toString(out[1]), "tensor[6]{1, 4, 2, 5, 3, 6}");
}

TEST(InterpreterTest, DifferentiableGraphRunsItsBodyOnTheSameValues) {
  auto g = parseGraph(R"IR(graph(%x : Tensor):
  %v : Tensor, %e : Tensor = prim::DifferentiableGraph(%x) {
    graph(%p : Tensor):
      %t : Tensor = aten::transpose[dim0=0, dim1=1](%p)
      %n : Tensor = aten::neg(%t)
      return (%t, %n)
  }
  %w : Tensor = aten::mul_(%x, %x)
  return (%v, %e)
)IR");
  RtTensor x = t23();
  auto out = runGraph(*g, {x});
  EXPECT_EQ(toString(out[0]), "tensor[3, 2]{1, 16, 4, 25, 9, 36}");  // saw the later write
  EXPECT_EQ(toString(out[1]), "tensor[3, 2]{-1, -4, -2, -5, -3, -6}");
}

TEST(InterpreterTest, BadShapesAndInputsThrow) {
  auto g = parseGraph(R"IR(graph(%x : Tensor, %y : Tensor):
  %a : Tensor = aten::add(%x, %y)
  return (%a)
)IR");
  EXPECT_THROW(runGraph(*g, {t23(), RtTensor::fromData({2}, {1, 2})}), RuntimeError);
  EXPECT_THROW(runGraph(*g, {t23()}), IrError);
  EXPECT_THROW(runGraph(*g, {t23(), 1.0}), IrError);
  auto inplace = parseGraph(R"IR(graph(%x : Tensor, %y : Tensor):
  %a : Tensor = aten::add_(%x, %y)
  return (%a)
)IR");
  EXPECT_THROW(runGraph(*inplace, {RtTensor::fromData({3}, {1, 2, 3}), t23()}), RuntimeError);
  auto sel = parseGraph(R"IR(graph(%x : Tensor):
  %a : Tensor = aten::select[dim=1, index=3](%x)
  return (%a)
)IR");
  EXPECT_THROW(runGraph(*sel, {t23()}), RuntimeError);
}

}  // namespace
}  // namespace ag::jit
