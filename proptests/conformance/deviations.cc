#include "proptests/conformance/deviations.h"

#include <cstring>
#include <mutex>
#include <stdexcept>

namespace ag::conformance {
namespace {

std::mutex uses_mutex;
std::map<std::string, int64_t>& uses() {
  static std::map<std::string, int64_t> m;
  return m;
}

}  // namespace

const std::vector<Deviation>& deviations() {
  static const std::vector<Deviation> list = {
      {"copying-shape-ops",
       "transpose and broadcast_to return new tensors, not views (broadcast_to: the input itself "
       "when it has the shape already)"},
      {"engine-random-numbers",
       "leaf values and dropout masks come from the engine's counter-based generator"},
      {"inplace-overlapping-views",
       "an in-place op may read a view of its target's memory with another shape"},
      {"sum-to-same-shape", "sum_to(a, a.shape()) returns a itself, also for 0-dim a"},
      {"backward-inputs-grad-fn",
       "backward(inputs=...) does not run the inputs' own grad_fn (PyTorch issue 92331)"},
      {"backward-inputs-retain-grad",
       "backward(inputs=[non-leaf]) does not make the tensor retain grad afterwards"},
  };
  return list;
}

std::string note_deviation(const char* id, std::string text) {
  bool listed = false;
  for (const Deviation& d : deviations()) listed = listed || std::strcmp(d.id, id) == 0;
  if (!listed) throw std::logic_error(std::string("deviation '") + id + "' is not listed");
  std::lock_guard<std::mutex> lock(uses_mutex);
  ++uses()[id];
  return text;
}

std::map<std::string, int64_t> deviation_uses() {
  std::lock_guard<std::mutex> lock(uses_mutex);
  return uses();
}

}  // namespace ag::conformance
