#include "engine/jit/executor.h"

#include <cstdio>

#include "engine/error.h"
#include "engine/jit/code.h"
#include "engine/jit/verifier.h"

namespace ag::jit {
namespace {

std::string exactText(const Tensor& t) {
  if (!t.defined()) return "None";
  std::string s = "tensor" + to_string(t.shape()) + "{";
  const std::vector<double> values = t.to_vector();
  for (size_t i = 0; i < values.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", values[i]);
    s += (i ? ", " : "") + std::string(buf);
  }
  return s + "}";
}

}  // namespace

std::string toString(const IValue& v) {
  if (const Tensor* t = std::get_if<Tensor>(&v)) return exactText(*t);
  if (const double* d = std::get_if<double>(&v)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", *d);
    return buf;
  }
  std::string s = "[";
  const TensorList& list = std::get<TensorList>(v);
  for (size_t i = 0; i < list.size(); ++i) s += (i ? ", " : "") + exactText(list[i]);
  return s + "]";
}

GraphExecutor::GraphExecutor(const Graph& graph) {
  verify(graph);
  code_ = std::make_unique<Code>(graph);
}

GraphExecutor::~GraphExecutor() = default;

std::vector<IValue> GraphExecutor::run(const std::vector<IValue>& inputs,
                                       const RunOptions& options) const {
  return code_->runGraph(inputs, options);
}

TensorList GraphExecutor::run(const TensorList& inputs) const {
  std::vector<IValue> in(inputs.begin(), inputs.end());
  TensorList out;
  for (IValue& v : code_->runGraph(in, {})) {
    AG_CHECK(std::holds_alternative<Tensor>(v),
             "GraphExecutor::run: the graph returns a value that is not a tensor; use the "
             "IValue overload");
    out.push_back(std::get<Tensor>(std::move(v)));
  }
  return out;
}

std::vector<IValue> runGraph(const Graph& graph, const std::vector<IValue>& inputs,
                             const RunOptions& options) {
  return GraphExecutor(graph).run(inputs, options);
}

}  // namespace ag::jit
