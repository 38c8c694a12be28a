// Properties of jit::CompiledFunction (Note [Compiled functions], engine/jit/compile.h) on random
// programs (proptests/jit/random_program.h): a program's results and its first- and second-order
// gradients, traced with the gradients and run on other inputs, are what the engine computes
// eagerly on those inputs. Reproduce a failure with
//   bazel test //proptests/jit:compiled_gradients_props_test --test_env=RC_PARAMS="seed=N"

#include <cmath>
#include <string>

#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/jit/compile.h"
#include "engine/options.h"
#include "ops/ops.h"
#include "proptests/fuzz_stats.h"
#include "proptests/graph_gen.h"
#include "proptests/jit/random_program.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

// The program, then grad of the sum of its differentiable results with respect to the chosen
// inputs (create_graph), then grad of the sum of those gradients' squares (second order): every
// result and gradient, undefined ones included (allow_unused).
TensorList withGradients(const JitProgramSpec& spec, const std::vector<char>& wanted,
                         const TensorList& inputs) {
  TensorList out = runProgram(spec, inputs);
  TensorList chosen;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (wanted[i % wanted.size()]) chosen.push_back(inputs[i]);
  }
  const Tensor loss = sumOfRequiringGrad(out);
  if (!loss.defined() || chosen.empty()) return out;
  const TensorList first = grad({loss}, chosen, GradArgs().create_graph().allow_unused());
  out.insert(out.end(), first.begin(), first.end());
  const Tensor second = sumOfSquares(first);
  if (!second.defined()) return out;
  const TensorList g2 = grad({second}, chosen, GradArgs().allow_unused());
  out.insert(out.end(), g2.begin(), g2.end());
  return out;
}

// Other values than the example's, of the same shapes: leaves that require grad.
TensorList otherInputs(const JitProgramSpec& spec) {
  TensorList in = programInputs(spec, false);
  for (Tensor& t : in) {
    t = ops::add(ops::mul(t, 1.25), 0.375);
    t.set_requires_grad(true);
  }
  return in;
}

std::string describe(const TensorList& ts) {
  std::string s;
  for (const Tensor& t : ts) s += (t.defined() ? toString(t) : std::string("undefined")) + "\n";
  return s;
}

bool allFinite(const TensorList& ts) {
  for (const Tensor& t : ts) {
    if (!t.defined()) continue;
    for (double v : t.to_vector()) {  // through its strides
      if (!std::isfinite(v)) return false;
    }
  }
  return true;
}

enum class Compare { kBits, kNumbers, kShapes };

// Whether `got` has the results `want` has: defined alike, of the same shapes, and holding the
// same bits, or the same numbers (-0 == 0), or (kShapes) any.
bool sameResults(const TensorList& got, const TensorList& want, Compare compare) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i].defined() != want[i].defined()) return false;
    if (!want[i].defined()) continue;
    if (got[i].shape() != want[i].shape() || got[i].dtype() != want[i].dtype()) return false;
    if (compare == Compare::kShapes) continue;
    if (compare == Compare::kBits) {
      if (toString(got[i]) != toString(want[i])) return false;
      continue;
    }
    // Element by element through each one's strides (a gradient may be an expanded view).
    if (got[i].to_vector() != want[i].to_vector()) return false;
  }
  return true;
}

// Without folding, the compiled graph is the ops the eager program ran, fused formula kernels
// included (recorded as aten::scaled_product), each computed once where the trace repeats one
// (Note [Common subexpressions], on or off at random): the same bits. With folding (Note
// [Structural zeros]), a product with a structurally zero operand is zero even where the other
// operand is not finite, so values are compared, as numbers, where the eager results are all
// finite.
AG_PROPERTY(CompiledGradientsProps, CompiledProgramsAndTheirGradientsMatchEager) {
  const JitProgramSpec spec = *genProgramSpec();
  ag::proptests::fuzz_stats().record_graph("compiled", static_cast<int64_t>(spec.steps.size()));
  const auto wanted = *rc::gen::container<std::vector<char>>(3, rc::gen::arbitrary<bool>());
  const bool fold = *rc::gen::arbitrary<bool>();
  const bool merge = *rc::gen::arbitrary<bool>();
  auto program = [&](const TensorList& in) { return withGradients(spec, wanted, in); };
  const EngineOptions options = *rc::gen::elementOf(ag::proptests::all_option_combinations());
  OptionsGuard guard(options);

  // Each run gets inputs of its own: a program may write into an input through a view of its
  // detach() (an alias whose writes nothing records), and its results may be views of an input.
  TensorList want;
  bool eager_failed = false;
  try {
    want = program(otherInputs(spec));
  } catch (const Error&) {
    eager_failed = true;
  }
  CompileOptions compile_options;
  compile_options.fold_zeros = fold;
  compile_options.merge_common_subexpressions = merge;
  std::unique_ptr<CompiledFunction> compiled;
  try {
    compiled =
        std::make_unique<CompiledFunction>(program, programInputs(spec, true), compile_options);
  } catch (const Error& e) {
    // The same program on other values of the same shapes: both fail, or neither; or the trace
    // meets an op the JIT cannot run, and says so (Note [Compiled functions]: the gradients of a
    // view whose base was written in place).
    const bool untraceable = std::string(e.what()).find("cannot be traced") != std::string::npos;
    RC_CLASSIFY(untraceable, "cannot be traced");
    if (!eager_failed && !untraceable) RC_FAIL(std::string("compiling failed: ") + e.what());
    return;
  }
  RC_ASSERT(!eager_failed);
  const TensorList got = (*compiled)(otherInputs(spec));
  const bool finite = allFinite(want);
  RC_CLASSIFY(compiled->zeros_folded() > 0, "zeros folded");
  RC_CLASSIFY(compiled->subexpressions_merged() > 0, "subexpressions merged");
  RC_ASSERT(merge || compiled->subexpressions_merged() == 0);
  RC_CLASSIFY(!finite, "not all finite");
  const Compare compare = !fold ? Compare::kBits : finite ? Compare::kNumbers : Compare::kShapes;
  if (!sameResults(got, want, compare)) {
    RC_FAIL(std::string(fold ? "folded" : "unfolded") + (merge ? ", merged" : "") +
            " compiled program differs from eager, " + "options " + ag::to_string(options) +
            "\ngraph:\n" + toString(compiled->graph()) + "expected:\n" + describe(want) + "got:\n" +
            describe(got));
  }
  for (const Tensor& t : got) {
    const bool has_history = t.defined() && t.grad_fn() != nullptr;
    RC_ASSERT(!has_history);  // run without autograd: the graph's gradients are its own ops
  }
}

}  // namespace
}  // namespace ag::proptests
