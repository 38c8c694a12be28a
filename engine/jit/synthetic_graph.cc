#include "engine/jit/synthetic_graph.h"

namespace ag::jit {

std::unique_ptr<Graph> makeLayeredGraph(size_t num_nodes) {
  auto g = std::make_unique<Graph>();
  Value* h = g->addInput(Type::Tensor, "x");
  Value* w = g->addInput(Type::Tensor, "w");
  const Attributes swap = {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}};
  auto op = [&](const char* kind, std::vector<Value*> in, Attributes attrs = {}) {
    return g->append(kind, in, std::move(attrs))->output();
  };
  for (size_t block = 0; g->numNodes() < num_nodes; ++block) {
    Value* t = op("aten::transpose", {h}, swap);
    Value* a = op("aten::mul", {t, w});
    Value* b = op("aten::tanh", {a});
    Value* r = op("aten::reshape", {b}, {{"shape", std::vector<int64_t>{3, 3}}});
    Value* s = op("aten::sigmoid", {r});
    h = op("aten::add", {s, h});
    if (block % 4 == 3) op("aten::add_", {h, w});
    if (block % 8 == 5) g->append("prim::Print", {h});
    if (block % 16 == 9) {
      Value* list = op("prim::ListConstruct", {h});
      h = g->append("prim::ListUnpack", {list}, {}, 1)->output();
    }
  }
  g->registerOutput(h);
  return g;
}

}  // namespace ag::jit
