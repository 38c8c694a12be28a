// Note [Tracing] (tracer.h).
#include "engine/jit/tracer.h"

#include "engine/error.h"
#include "engine/jit/schema.h"
#include "engine/jit/verifier.h"

namespace ag::jit {

void TracingState::bind(const Tensor& t, Value* v) {
  keep_alive_.push_back(t.impl());
  values_[t.impl().get()] = v;
  storages_[t.impl()->storage.get()].push_back(t.impl().get());
  if (metas_.size() <= v->id()) metas_.resize(v->id() + 1);
  metas_[v->id()] = TensorMeta::of(t);
}

Value* TracingState::sameLayoutValue(const Tensor& t) const {
  auto shared = storages_.find(t.impl()->storage.get());
  if (shared == storages_.end()) return nullptr;
  for (auto it = shared->second.rbegin(); it != shared->second.rend(); ++it) {
    const TensorImpl& bound = **it;
    // The strides too: a transpose of a square matrix has its base's offset and shape.
    const bool same_strides = (bound.strides == nullptr) == (t.impl()->strides == nullptr) &&
                              (bound.strides == nullptr || *bound.strides == *t.impl()->strides);
    if (bound.offset == t.impl()->offset && bound.shape == t.shape() && bound.dtype == t.dtype() &&
        same_strides) {
      return values_.at(&bound);
    }
  }
  return nullptr;
}

Value* TracingState::valueOf(const Tensor& t) {
  if (!t.defined()) return graph_.appendConstant(Tensor());
  auto it = values_.find(t.impl().get());
  if (it != values_.end()) return it->second;
  if (mode_ == TraceMode::kWithGradients) {
    if (Value* same = sameLayoutValue(t)) {
      bind(t, same);
      return same;
    }
  }
  // A constant must not share memory with a traced value: AliasDb would take them for distinct.
  auto shared = storages_.find(t.impl()->storage.get());
  AG_CHECK(shared == storages_.end(), "trace: a ", t.describe(),
           " tensor that no traced op made shares memory with %",
           values_.at(shared->second.front())->name(),
           " (a view made before tracing, or Tensor::detach()? pass its base as an input, or "
           "use ops::detach)");
  Value* v = graph_.appendConstant(t);
  bind(t, v);
  return v;
}

void TracingState::record_op(const ops::OpSpec& spec, std::initializer_list<const Tensor*> inputs,
                             const Tensor& result, const ops::OpAttrs& attrs) {
  const std::string kind = "aten::" + spec.name();
  AG_CHECK(lookupSchema(kind) != nullptr, "trace: op '", spec.name(),
           "' has no forward for the JIT (Note [Op schema]) and cannot be traced");
  std::vector<Value*> in;
  in.reserve(inputs.size());
  for (const Tensor* t : inputs) in.push_back(valueOf(*t));
  Node* n = graph_.append(kind, in, toAttributes(attrs));
  bind(result, n->output());
}

TracingScope::TracingScope(const TensorList& inputs, TraceMode mode)
    : graph_(std::make_unique<Graph>()) {
  state_.emplace(*graph_, mode);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    AG_CHECK(t.defined(), "trace: input ", i, " is undefined");
    for (size_t j = 0; j < i; ++j) {
      AG_CHECK(t.impl()->storage.get() != inputs[j].impl()->storage.get(), "trace: inputs ", j,
               " and ", i,
               " share memory; pass distinct tensors (AliasDb assumes inputs do not "
               "alias)");
    }
    state_->bind(t, graph_->addInput(Type::Tensor, "x" + std::to_string(i)));
  }
  hook_.emplace(&*state_);
}

TracingScope::~TracingScope() = default;

std::unique_ptr<Graph> TracingScope::finish(const TensorList& outputs,
                                            std::vector<std::optional<TensorMeta>>* metas) {
  AG_CHECK(graph_ != nullptr, "trace: finish() called twice");
  std::vector<Value*> values;
  for (const Tensor& t : outputs) values.push_back(state_->valueOf(t));
  hook_.reset();
  if (metas != nullptr) *metas = state_->metas();
  for (Value* v : values) graph_->registerOutput(v);
  state_.reset();
  verify(*graph_);
  return std::move(graph_);
}

std::unique_ptr<Graph> trace(const std::function<TensorList(const TensorList&)>& fn,
                             const TensorList& inputs) {
  TracingScope scope(inputs);
  return scope.finish(fn(inputs));
}

}  // namespace ag::jit
