// DEVIATIONS.md and deviations.cc list the same entries, under the same headings.
#include "proptests/conformance/deviations.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

namespace ag::proptests {
namespace {

// The `### \`id\`` headings under "## <section>".
std::set<std::string> documented(const std::string& section) {
  std::ifstream in("proptests/conformance/DEVIATIONS.md");
  EXPECT_TRUE(in) << "cannot read DEVIATIONS.md";
  std::set<std::string> ids;
  std::string line, current;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) current = line.substr(3);
    if (line.rfind("### `", 0) == 0 && current == section) {
      ids.insert(line.substr(5, line.find('`', 5) - 5));
    }
  }
  return ids;
}

std::set<std::string> listed(ExplanationKind kind) {
  std::set<std::string> ids;
  for (const Explanation& x : explanations()) {
    if (x.kind == kind) ids.insert(x.id);
  }
  return ids;
}

TEST(Deviations, DocumentListsEveryDeviationOnce) {
  EXPECT_EQ(documented("Deviations"), listed(ExplanationKind::kDeviation));
}

TEST(Deviations, DocumentListsEveryOpenBugOnce) {
  EXPECT_EQ(documented("Open engine bugs"), listed(ExplanationKind::kOpenBug));
}

TEST(Deviations, UnlistedIdsAreRefused) {
  EXPECT_THROW(note_deviation("not-a-listed-deviation", ""), std::logic_error);
  EXPECT_EQ(note_deviation("engine-random-numbers", "x"), "x");
}

}  // namespace
}  // namespace ag::proptests
