#include "proptests/conformance/deviations.h"

#include <mutex>
#include <stdexcept>

namespace ag::proptests {
namespace {

std::mutex uses_mutex;
std::map<std::string, int64_t>& uses() {
  static std::map<std::string, int64_t> m;
  return m;
}

constexpr ExplanationKind kDeviation = ExplanationKind::kDeviation;
constexpr ExplanationKind kOpenBug = ExplanationKind::kOpenBug;
constexpr AppliedWhere kRendering = AppliedWhere::kRendering;
constexpr AppliedWhere kComparing = AppliedWhere::kComparing;

}  // namespace

const std::vector<Explanation>& explanations() {
  static const std::vector<Explanation> list = {
      // Deviations, applied where the scripts are rendered.
      {"engine-random-numbers", kDeviation, kRendering,
       "leaf values and dropout masks come from the engine's counter-based generator"},
      {"too-hard-overlaps-read-first", kDeviation, kRendering,
       "an in-place op reads an operand that overlaps its target where PyTorch cannot tell how "
       "(TOO_HARD) before the write, not as the write goes"},
      {"unused-input-checked-first", kDeviation, kRendering,
       "grad() checks that every input is reachable before it runs anything"},
      {"backward-grad-tensors-copied", kDeviation, kRendering,
       "a leaf's .grad never shares storage with the caller's grad_tensors"},
      // Deviations, applied where the records are compared.
      {"extra-executions", kDeviation, kComparing,
       "nodes whose gradients reach no requested tensor are not run (PyTorch issue 92331 and "
       "sibling outputs)"},
      {"unused-input-zeros", kDeviation, kComparing,
       "grad() gives zeros for a reached input that gets no gradient (a sibling output)"},
      {"version-check-per-formula", kDeviation, kComparing,
       "a node checks the versions of the saved tensors its formulas read in this call"},
      {"held-grad-tensors", kDeviation, kComparing,
       "a .grad is never a view of a backward() gradient that shares storage with another .grad"},
      {"overlapping-operand-saved", kDeviation, kComparing,
       "an in-place op saves an operand that views its target's memory, which the write changes"},
      {"linear-saves-weight", kDeviation, kComparing,
       "linear saves its weight, not a transposed view of it with a history of its own"},
      {"matmul-result-view", kDeviation, kComparing,
       "matmul of a matrix by a batch never returns a view (PyTorch's may be a transposed one)"},
      {"mm-gradient-view", kDeviation, kComparing,
       "mm's gradient for a column-major operand is the product, not a transposed view of it"},
      {"pytorch-internal-error", kDeviation, kComparing,
       "PyTorch fails an internal assert: the rest of the program is not compared"},
      {"rebased-base-node-edges", kDeviation, kComparing,
       "a write through a view gives the base a node with other edges than CopySlices': its "
       "post-hooks are handed other grad_inputs"},
      {"retains-grad-moved-by-output-nr", kDeviation, kComparing,
       "PyTorch's in-place op on a retaining non-first output moves output 0's retains-grad hook"},
      {"inplace-mul-aliased-tangent", kDeviation, kComparing,
       "PyTorch's mul_ tangent reads the written primal where the operand aliases the target"},
      {"no-grad-view-saved-error", kDeviation, kComparing,
       "PyTorch blames grad mode for a saved no_grad view written under no_grad"},
  };
  return list;
}

const Explanation* find_explanation(const std::string& id) {
  for (const Explanation& e : explanations()) {
    if (id == e.id) return &e;
  }
  return nullptr;
}

std::string note_deviation(const char* id, std::string text) {
  if (!find_explanation(id)) throw std::logic_error(std::string("'") + id + "' is not listed");
  std::lock_guard<std::mutex> lock(uses_mutex);
  ++uses()[id];
  return text;
}

std::map<std::string, int64_t> deviation_uses() {
  std::lock_guard<std::mutex> lock(uses_mutex);
  return uses();
}

}  // namespace ag::proptests
