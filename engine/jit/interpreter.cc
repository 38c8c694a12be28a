#include "engine/jit/interpreter.h"

#include <cmath>
#include <unordered_map>

#include "engine/jit/runtime_ops.h"

namespace ag::jit {
namespace {

using Env = std::unordered_map<const Value*, RtValue>;

const RtTensor& tensorArg(const Env& env, const Node& n, size_t i) {
  return std::get<RtTensor>(env.at(n.input(i)));
}

std::vector<RtValue> runNode(const Node& n, const Env& env, PrintLog* log) {
  const std::string& k = n.kind();
  auto t = [&](size_t i) -> const RtTensor& { return tensorArg(env, n, i); };

  if (k == "aten::add") return {rt::binary("aten::add", t(0), t(1), [](double a, double b) { return a + b; })};
  if (k == "aten::sub") return {rt::binary("aten::sub", t(0), t(1), [](double a, double b) { return a - b; })};
  if (k == "aten::mul") return {rt::binary("aten::mul", t(0), t(1), [](double a, double b) { return a * b; })};
  if (k == "aten::neg") return {rt::unary(t(0), [](double a) { return -a; })};
  if (k == "aten::exp") return {rt::unary(t(0), [](double a) { return std::exp(a); })};
  if (k == "aten::tanh") return {rt::unary(t(0), [](double a) { return std::tanh(a); })};
  if (k == "aten::sigmoid") return {rt::unary(t(0), [](double a) { return 1.0 / (1.0 + std::exp(-a)); })};
  if (k == "aten::relu") return {rt::unary(t(0), [](double a) { return a > 0 ? a : 0.0; })};
  if (k == "aten::sum") return {rt::sum(t(0))};
  if (k == "aten::mul_scalar") {
    double s = std::get<double>(env.at(n.input(1)));
    return {rt::unary(t(0), [s](double a) { return a * s; })};
  }
  if (k == "aten::transpose") return {rt::transpose(t(0), n.intAttr("dim0"), n.intAttr("dim1"))};
  if (k == "aten::reshape") return {rt::reshape(t(0), n.intsAttr("shape"))};
  if (k == "aten::select") return {rt::select(t(0), n.intAttr("dim"), n.intAttr("index"))};
  if (k == "aten::add_" || k == "aten::mul_") {
    RtTensor self = t(0);  // shares storage with the input: writes go through
    if (k == "aten::add_") {
      rt::binaryInPlace("aten::add_", self, t(1), [](double a, double b) { return a + b; });
    } else {
      rt::binaryInPlace("aten::mul_", self, t(1), [](double a, double b) { return a * b; });
    }
    return {self};
  }
  if (k == "prim::ListConstruct") {
    RtList list;
    for (size_t i = 0; i < n.inputs().size(); ++i) list.push_back(t(i));
    return {list};
  }
  if (k == "prim::ListUnpack") {
    const RtList& list = std::get<RtList>(env.at(n.input(0)));
    if (list.size() != n.outputs().size()) {
      throw RuntimeError("prim::ListUnpack: list of " + std::to_string(list.size()) + " tensors unpacked into " +
                         std::to_string(n.outputs().size()) + " values");
    }
    return std::vector<RtValue>(list.begin(), list.end());
  }
  if (k == "aten::cat") return {rt::cat(std::get<RtList>(env.at(n.input(0))), n.intAttr("dim"))};
  if (k == "prim::Constant") return {n.floatAttr("value")};
  if (k == "prim::Print") {
    if (log != nullptr) log->push_back(toString(env.at(n.input(0))));
    return {};
  }
  if (n.isDifferentiableGraph()) {
    std::vector<RtValue> inputs;
    for (const Value* in : n.inputs()) inputs.push_back(env.at(in));
    return runGraph(*n.subgraph(), inputs, log);
  }
  throw IrError("interpreter: no kernel for op '" + k + "'");
}

void checkType(const Value* v, const RtValue& value) {
  bool ok = (v->type() == Type::Tensor && std::holds_alternative<RtTensor>(value)) ||
            (v->type() == Type::TensorList && std::holds_alternative<RtList>(value)) ||
            (v->type() == Type::Float && std::holds_alternative<double>(value));
  if (!ok) throw IrError(std::string("interpreter: %") + v->name() + " expects a value of type " + typeName(v->type()));
}

}  // namespace

std::vector<RtValue> runGraph(const Graph& graph, const std::vector<RtValue>& inputs, PrintLog* log) {
  if (inputs.size() != graph.inputs().size()) {
    throw IrError("interpreter: graph takes " + std::to_string(graph.inputs().size()) + " inputs, got " +
                  std::to_string(inputs.size()));
  }
  Env env;
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkType(graph.inputs()[i], inputs[i]);
    env[graph.inputs()[i]] = inputs[i];
  }
  for (Node* n = graph.firstNode(); n != graph.returnNode(); n = n->next()) {
    std::vector<RtValue> results = runNode(*n, env, log);
    if (results.size() != n->outputs().size()) {
      throw IrError("interpreter: " + n->kind() + " produced " + std::to_string(results.size()) + " values for " +
                    std::to_string(n->outputs().size()) + " outputs");
    }
    for (size_t i = 0; i < results.size(); ++i) env[n->output(i)] = std::move(results[i]);
  }
  std::vector<RtValue> outputs;
  for (const Value* out : graph.outputs()) outputs.push_back(env.at(out));
  return outputs;
}

}  // namespace ag::jit
