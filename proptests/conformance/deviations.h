#pragma once

// The engine's deliberate deviations from PyTorch that the conformance corpus honours. Each is
// listed once, with its reason, in proptests/conformance/DEVIATIONS.md (deviations_test checks
// that the file and this list name the same ids); the code that applies one says which, through
// note_deviation(), so no deviation is applied that is not listed.

#include <map>
#include <string>
#include <vector>

namespace ag::conformance {

struct Deviation {
  const char* id;
  const char* summary;
};

const std::vector<Deviation>& deviations();

// Returns `text` after checking that `id` is listed (std::logic_error otherwise) and counting the
// use, so a caller can report which deviations a run applied and how often.
std::string note_deviation(const char* id, std::string text);
std::map<std::string, int64_t> deviation_uses();

}  // namespace ag::conformance
