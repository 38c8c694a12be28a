#pragma once

// Where this engine and PyTorch may differ in the conformance corpus, each listed once, with its
// reason, in proptests/conformance/DEVIATIONS.md (deviations_test checks that the file and this
// list name the same ids):
//   - deviations: deliberate choices of this engine;
//   - open bugs: engine bugs the corpus found that are not fixed yet. A program whose records
//     first differ by an open bug stops being compared there; the corpus test requires every
//     open bug to still occur, so each entry goes away with its fix.
// The code that applies an entry names it, through note_deviation() (rendering) or the rules in
// comparison.cc (comparing); nothing that is not listed is applied.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ag::proptests {

enum class ExplanationKind { kDeviation, kOpenBug };
enum class AppliedWhere { kRendering, kComparing };

struct Explanation {
  const char* id;
  ExplanationKind kind;
  AppliedWhere where;
  const char* summary;
};

const std::vector<Explanation>& explanations();
const Explanation* find_explanation(const std::string& id);

// Returns `text` after checking that `id` is listed (std::logic_error otherwise) and counting the
// use, so a caller can report which entries a run applied and how often.
std::string note_deviation(const char* id, std::string text);
std::map<std::string, int64_t> deviation_uses();

}  // namespace ag::proptests
