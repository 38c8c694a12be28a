// Note [Guarded saves] on random compositions:
//  - a node holds exactly the slots that some formula of an input requiring grad uses;
//  - live bytes after the forward equal the output plus what those saves hold, nothing else;
//  - the guards change no gradient (bitwise) and never save more than no guards do.

#include <set>

#include "engine/autograd.h"
#include "engine/counters.h"
#include "engine/memory/allocator.h"
#include "engine/options.h"
#include "ops/ops.h"
#include "ops/record.h"
#include "proptests/ops/composition.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

// Visits every node reachable from `root`.
template <typename F>
void for_each_node(const std::shared_ptr<Node>& root, F f) {
  std::vector<std::shared_ptr<Node>> stack = {root};
  std::set<const Node*> seen = {root.get()};
  while (!stack.empty()) {
    std::shared_ptr<Node> node = stack.back();
    stack.pop_back();
    f(node);
    for (const Edge& e : node->next_edges()) {
      if (e.is_valid() && seen.insert(e.function.get()).second) stack.push_back(e.function);
    }
  }
}

AG_PROPERTY(OpsSaves, OnlyNeededValuesAreRetained) {
  const Plan plan = pick_plan();
  const TensorList leaves = make_leaves(plan, DType::kFloat32);
  std::set<const Storage*> existing;
  for (const Tensor& t : leaves) existing.insert(t.impl()->storage.get());

  const int64_t before = live_bytes();
  Tensor out = run(plan, leaves)[plan.output()];  // every intermediate handle is dropped
  const int64_t after = live_bytes();

  std::set<const Storage*> held = {out.impl()->storage.get()};
  if (out.grad_fn()) {
    for_each_node(out.grad_fn(), [&](const std::shared_ptr<Node>& node) {
      auto* op = dynamic_cast<ops::OpNode*>(node.get());
      if (!op) return;
      uint64_t requires = 0;  // bit i: input i
      for (size_t i = 0; i < op->num_outputs(); ++i) {
        if (op->next_edge(i).is_valid()) requires |= uint64_t{1} << i;
      }
      for (size_t j = 0; j < op->spec().num_slots(); ++j) {
        const SavedVariable& s = op->saved()[j];
        if (s.defined() != op->spec().slot_needed(j, requires)) {
          RC_FAIL(op->spec().slot_key(j).name() +
                  (s.defined() ? " saved but not needed" : " needed but not saved"));
        }
        if (s.defined()) held.insert(s.unpack(*node, "").impl()->storage.get());
      }
    });
  }
  int64_t expected = 0;
  for (const Storage* s : held) {
    if (!existing.count(s)) expected += static_cast<int64_t>(s->nbytes());
  }
  RC_ASSERT(after - before == expected);
}

AG_PROPERTY(OpsSaves, GuardsChangeNoGradient) {
  const Plan plan = pick_plan();
  std::vector<std::vector<double>> grads[2];
  int64_t bytes_saved[2];
  for (bool on : {false, true}) {
    EngineOptions options;
    options.guard_saves = on;
    OptionsGuard guard(options);
    const TensorList leaves = make_leaves(plan, DType::kFloat64);
    reset_counters();
    Tensor out = run(plan, leaves)[plan.output()];
    bytes_saved[on] = counters().bytes_saved;
    if (!out.requires_grad()) return;  // nothing to differentiate (e.g. sum of an empty graph)
    Tensor w = ops::uniform(out.shape(), -1, 1, /*seed=*/99, DType::kFloat64);
    TensorList wrt;
    for (const Tensor& t : leaves) {
      if (t.requires_grad()) wrt.push_back(t);
    }
    for (const Tensor& g :
         grad({ops::sum(ops::mul(out, w))}, wrt, GradArgs().retain_graph({}).allow_unused())) {
      grads[on].push_back(g.defined() ? g.to_vector() : std::vector<double>{});
    }
  }
  RC_ASSERT(grads[true] == grads[false]);
  RC_ASSERT(bytes_saved[true] <= bytes_saved[false]);
}

}  // namespace
}  // namespace ag::proptests
