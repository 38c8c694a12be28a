// Properties of the JIT on traced random programs (proptests/jit/random_program.h): the tracer,
// create_autodiff_subgraphs in both AliasDb modes, and the executor, whose DifferentiableGraphs
// run as autograd nodes, against the same program run eagerly. Reproduce a failure with
//   bazel test //proptests/jit:traced_program_props_test --test_env=RC_PARAMS="seed=N"

#include <unordered_map>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/jit/alias_db_lint.h"
#include "engine/jit/create_autodiff_subgraphs.h"
#include "engine/jit/executor.h"
#include "engine/jit/subgraph_utils.h"
#include "engine/jit/tracer.h"
#include "engine/options.h"
#include "ops/ops.h"
#include "proptests/fuzz_stats.h"
#include "proptests/graph_gen.h"
#include "proptests/jit/random_program.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

JitProgramSpec pickProgramSpec() {
  const JitProgramSpec spec = *genProgramSpec();
  ag::proptests::fuzz_stats().record_graph("traced", static_cast<int64_t>(spec.steps.size()));
  return spec;
}

std::unique_ptr<Graph> traceProgram(const JitProgramSpec& spec) {
  return trace([&](const TensorList& in) { return runProgram(spec, in); },
               programInputs(spec, false));
}

AutodiffSubgraphOptions optionsFor(AliasDbMode mode, size_t min_size) {
  AutodiffSubgraphOptions o;
  o.mode = mode;
  o.min_subgraph_size = min_size;
  return o;
}

std::string text(const TensorList& ts, const char* label) {
  std::string s;
  for (const Tensor& t : ts) s += std::string(label) + " " + toString(t) + "\n";
  return s;
}

// Everything observable about running a program (eager or compiled) on fresh inputs: its
// results bit for bit, the gradients of the sum of its differentiable results with respect to
// the inputs `wanted` (create_graph), and the gradients of the sum of those gradients' squares
// (second order); or the stage at which the engine refused. `second` gets the second-order
// gradients apart (Note [What compiled programs are compared with]).
std::string observe(const std::function<TensorList(const TensorList&)>& program,
                    const JitProgramSpec& spec, const std::vector<char>& wanted,
                    TensorList* second_order = nullptr) {
  const TensorList inputs = programInputs(spec, true);
  TensorList chosen;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (wanted[i % wanted.size()]) chosen.push_back(inputs[i]);
  }
  TensorList outs;
  try {
    outs = program(inputs);
  } catch (const Error& e) {
    return std::string("error in forward\n") + e.what();
  }
  std::string s = text(outs, "out");
  const Tensor loss = sumOfRequiringGrad(outs);
  if (!loss.defined() || chosen.empty()) return s;
  TensorList first;
  try {
    first = grad({loss}, chosen, GradArgs().create_graph().allow_unused());
  } catch (const Error&) {
    return s + "error in first-order grad\n";
  }
  s += text(first, "grad");
  const Tensor second = sumOfSquares(first);
  if (!second.defined()) return s;
  try {
    TensorList g2 = grad({second}, chosen, GradArgs().allow_unused());
    for (const Tensor& g : g2) s += g.defined() ? "grad2 defined\n" : "grad2 None\n";
    if (second_order != nullptr) *second_order = std::move(g2);
  } catch (const Error&) {
    return s + "error in second-order grad\n";
  }
  return s;
}

// A program's results, or the error it raised (a write into a view made before its base
// required grad is refused, as PyTorch refuses it, once the inputs require grad).
std::string values_or_error(const std::function<TensorList(const TensorList&)>& program,
                            const TensorList& inputs) {
  try {
    return text(program(inputs), "out");
  } catch (const Error& e) {
    return std::string("error ") + e.what();
  }
}

// The graph with every group replaced by its body: the pass's order, each op its own node.
std::unique_ptr<Graph> inlined(const Graph& g) {
  std::unique_ptr<Graph> copy = g.copy();
  for (Node* n : copy->nodes()) {
    if (n->isDifferentiableGraph()) inlineGroup(n, ValueTracker());
  }
  return copy;
}

// Note [What compiled programs are compared with]
// A traced graph run by the executor is the eager program: the same ops in the same order, so
// values and gradients match bit for bit. The pass then moves nodes into groups; a moved node
// computes the same values, but backward meets the ops in another order, so where several
// gradients of one tensor are summed they may be summed in another order (floating-point
// addition is not associative). What a group itself must not change is checked against the
// pass's own order with the groups inlined: running a group as one autograd node gives the
// same bits as running its ops one by one: values, first-order and second-order gradients (the
// latter rely on Note [Contributions in eager order], engine/jit/differentiate.h).

AG_PROPERTY(TracedProgramProps, TracedGraphsAndGroupsMatchEagerBitwiseUnderEveryOption) {
  const JitProgramSpec spec = pickProgramSpec();
  const size_t min_size = *rc::gen::inRange<size_t>(1, 4);
  const auto wanted = *rc::gen::container<std::vector<char>>(3, rc::gen::arbitrary<bool>());
  const std::unique_ptr<Graph> traced = traceProgram(spec);
  const std::string original = toString(*traced);
  auto eager = [&](const TensorList& in) { return runProgram(spec, in); };
  auto fail = [&](const std::string& what, const EngineOptions& options, const Graph& g,
                  const std::string& expected, const std::string& actual) {
    RC_FAIL(what + ", options " + ag::to_string(options) + "\ntraced:\n" + original + "run:\n" +
            toString(g) + "expected:\n" + expected + "got:\n" + actual);
  };
  const GraphExecutor traced_exec(*traced);
  auto replay = [&](const TensorList& in) { return traced_exec.run(in); };
  for (const EngineOptions& options : ag::proptests::all_option_combinations()) {
    OptionsGuard guard(options);
    TensorList expected_second, actual_second;
    const std::string expected = observe(eager, spec, wanted, &expected_second);
    const std::string actual = observe(replay, spec, wanted, &actual_second);
    if (expected != actual || text(expected_second, "") != text(actual_second, ""))
      fail("the traced graph differs from eager", options, *traced, expected, actual);
  }
  size_t groups = 0;
  for (AliasDbMode mode : {AliasDbMode::kIncremental, AliasDbMode::kRebuild}) {
    std::unique_ptr<Graph> g = traced->copy();
    groups = createAutodiffSubgraphs(*g, optionsFor(mode, min_size)).groups;
    const std::unique_ptr<Graph> flat = inlined(*g);
    const GraphExecutor exec(*g), flat_exec(*flat);
    auto compiled = [&](const TensorList& in) { return exec.run(in); };
    auto op_by_op = [&](const TensorList& in) { return flat_exec.run(in); };
    for (const EngineOptions& options : ag::proptests::all_option_combinations()) {
      OptionsGuard guard(options);
      TensorList expected_second, actual_second;
      const std::string expected = observe(op_by_op, spec, wanted, &expected_second);
      const std::string actual = observe(compiled, spec, wanted, &actual_second);
      if (expected != actual || text(expected_second, "") != text(actual_second, "")) {
        fail(std::string("groups differ from their ops, AliasDb mode ") + modeName(mode), options,
             *g, expected + text(expected_second, "grad2"), actual + text(actual_second, "grad2"));
      }
      // The pass itself changes no value.
      const std::string eager_values = values_or_error(eager, programInputs(spec, true));
      const std::string compiled_values = values_or_error(compiled, programInputs(spec, true));
      if (eager_values != compiled_values) {
        fail("the pass changed a value", options, *g, eager_values, compiled_values);
      }
    }
  }
  RC_CLASSIFY(groups > 0, "groups");
}

AG_PROPERTY(TracedProgramProps, IncrementalAliasDbEqualsFreshAfterEveryMerge) {
  const JitProgramSpec spec = pickProgramSpec();
  const size_t min_size = *rc::gen::inRange<size_t>(1, 4);
  std::unique_ptr<Graph> g = traceProgram(spec);
  const std::string original = toString(*g);
  size_t checks = 0;
  AutodiffSubgraphOptions o = optionsFor(AliasDbMode::kIncremental, min_size);
  o.after_each_change = [&](const Graph& now, const AliasDb& db, const std::string& what) {
    ++checks;
    AliasDb fresh(now);
    if (auto diff = findAliasDbDifference(now, db, fresh)) {
      RC_FAIL("incremental AliasDb differs from a fresh one after " + what + " #" +
              std::to_string(checks) + ": " + *diff + "\ngraph now:\n" + toString(now) +
              "traced graph:\n" + original);
    }
  };
  const AutodiffSubgraphStats stats = createAutodiffSubgraphs(*g, o);
  RC_ASSERT(checks == stats.singletons + stats.merges + stats.unmerged_groups);
  RC_CLASSIFY(stats.merges > 0, "merged");
}

// Storages that a reshape which copied at run time joins into one class. reshape is a view only
// where the strides allow one (a permuted clone's reshape copies, as PyTorch's), and AliasDb, as
// PyTorch's, says its output may alias its input: two values in one class would share storage
// had every reshape been a view.
class ReshapeBridgedStorages {
 public:
  void bridge(const void* a, const void* b) { parent_[find(a)] = find(b); }
  const void* find(const void* s) {
    auto it = parent_.find(s);
    if (it == parent_.end()) return s;
    return it->second = find(it->second);
  }

 private:
  std::unordered_map<const void*, const void*> parent_;
};

// What AliasDb says of a traced graph's values is what the engine does at run time: two values
// may alias iff their tensors share storage, or would if every reshape had been a view (a traced
// graph has no lists, so no wildcards make the analysis conservative). Checked before and after
// the pass, on the top-level values; reshapes inside the pass's subgraphs bridge too.
void checkAliasingAgainstStorage(const Graph& g, const JitProgramSpec& spec) {
  std::vector<std::pair<const Value*, Tensor>> seen;   // keeps the tensors alive: no address reuse
  std::vector<std::pair<const Value*, Tensor>> inner;  // values of the subgraphs, as `seen`
  RunOptions options;
  options.observe = [&](const Value* v, const IValue& value) {
    const Tensor* t = std::get_if<Tensor>(&value);
    if (t == nullptr || !t->defined()) return;
    (v->node()->owningGraph() == &g ? seen : inner).emplace_back(v, *t);
  };
  std::vector<IValue> inputs;
  for (const Tensor& t : programInputs(spec, false)) inputs.push_back(t);
  runGraph(g, inputs, options);

  std::unordered_map<const Value*, const void*> storage_of;
  for (const auto* values : {&seen, &inner}) {
    for (const auto& [v, t] : *values) storage_of[v] = t.impl()->storage.get();
  }
  ReshapeBridgedStorages classes;
  size_t copies = 0;
  for (const auto& [v, storage] : storage_of) {
    if (v->node()->kind() != "aten::reshape") continue;
    auto in = storage_of.find(v->node()->inputs()[0]);
    if (in == storage_of.end() || in->second == storage) continue;
    classes.bridge(in->second, storage);
    ++copies;
  }
  RC_CLASSIFY(copies > 0, "a reshape copied");

  AliasDb db(g);
  for (size_t i = 0; i < seen.size(); ++i) {
    for (size_t j = i + 1; j < seen.size(); ++j) {
      const void* a = storage_of[seen[i].first];
      const void* b = storage_of[seen[j].first];
      const bool shares = a == b;
      const bool bridged = classes.find(a) == classes.find(b);
      const bool may = db.mayAlias(seen[i].first, seen[j].first);
      if (shares && !may) {
        RC_FAIL("%" + seen[i].first->name() + " and %" + seen[j].first->name() +
                " share storage but AliasDb says they cannot alias\ngraph:\n" + toString(g));
      }
      if (may && !bridged) {
        RC_FAIL("%" + seen[i].first->name() + " and %" + seen[j].first->name() +
                " do not share storage, nor would through a reshape that copied, but AliasDb "
                "says they may alias\ngraph:\n" +
                toString(g));
      }
    }
  }
}

AG_PROPERTY(TracedProgramProps, AliasDbAgreesWithRuntimeStorageSharing) {
  const JitProgramSpec spec = pickProgramSpec();
  std::unique_ptr<Graph> g = traceProgram(spec);
  checkAliasingAgainstStorage(*g, spec);
  createAutodiffSubgraphs(*g, optionsFor(AliasDbMode::kIncremental, 2));
  checkAliasingAgainstStorage(*g, spec);
}

}  // namespace
}  // namespace ag::proptests
