#pragma once

// The system under test for the API state machine: the engine tensors the user holds, by name,
// and the comparison of everything observable about them with the model.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/forward_ad.h"
#include "engine/removable_handle.h"
#include "engine/saved_tensor_hooks.h"
#include "engine/tensor.h"
#include "proptests/api_model/model.h"

namespace ag::proptests {

// One call of a hook the runner registered: its id and what it was handed (HookFire, model.h).
struct FiredHook {
  int id;
  std::vector<HookValue> values;
};

// What a hook logs of the tensors it is handed.
HookValue hook_value(const Tensor& t);
std::vector<HookValue> hook_values(const TensorList& ts);

struct Sut {
  std::map<int, Tensor> tensors;   // name -> the tensor bound to it
  std::vector<std::string> shown;  // the commands run so far (for a hang report)
  TensorList returned;             // what the last call returned (grad())
  std::set<std::string> events;    // what this sequence exercised (the fuzz driver's coverage)
  // Engine version minus model version of each storage whose first version is not part of the
  // contract (StorageState::version_from_zero), fixed when first seen.
  std::map<int, int64_t> version_offsets;
  // The hooks registered (by the model's id) and what they were handed in the current call.
  std::map<int, RemovableHandle> hook_handles;
  std::shared_ptr<std::vector<FiredHook>> hook_log = std::make_shared<std::vector<FiredHook>>();
  // Note [Model saved-tensor hooks]: the open scopes, innermost last (closed in that order), and
  // each scope's pack calls by the model's id.
  std::vector<std::unique_ptr<SavedTensorsHooks>> saved_hooks;
  std::map<int, std::shared_ptr<int>> pack_calls;
  // The live dual level (Note [Model dual levels]); last, so it ends before the tensors go.
  std::unique_ptr<DualLevel> dual_level;

  Sut() = default;
  Sut(const Sut&) = delete;
  Sut& operator=(const Sut&) = delete;
  // create_graph makes .grad refer back to its leaf: break those cycles.
  ~Sut();

  // A tensor bound to model impl `impl` (any of its names).
  Tensor& tensor_of(const Model& m, int impl);

  // Compares every live tensor (values, shape, requires_grad, is_leaf, version, .grad) and which
  // of them share storage or are the same tensor object with the model; RC_FAILs on the first
  // difference, naming the tensor and the rule.
  void check(const Model& m, const std::string& after);
};

// Aborts the process with a readable report if a command runs longer than `seconds` (a hang in
// the engine would otherwise only show up as a test timeout, with no command list).
class HangGuard {
 public:
  HangGuard(const Sut& sut, double seconds);
  ~HangGuard();
  HangGuard(const HangGuard&) = delete;
  HangGuard& operator=(const HangGuard&) = delete;
};

// Whether two computed values agree (float64 results of different but exact formulas).
bool close(double a, double b);

}  // namespace ag::proptests
