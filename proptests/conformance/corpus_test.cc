// The committed corpus (proptests/conformance/corpus/): every program runs on this engine and its
// records must agree with the ones PyTorch wrote, up to the entries of DEVIATIONS.md. No PyTorch
// is needed. A failure prints each mismatching program with its first differing record; rerun
// one against a live PyTorch with
//   bazel run -c opt //proptests/conformance:export -- --show ID [--reduce]
#include "proptests/conformance/corpus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "proptests/conformance/comparison.h"
#include "proptests/conformance/deviations.h"
#include "proptests/conformance/torch_script.h"

namespace ag::proptests {
namespace {

struct CorpusRun {
  int programs = 0;
  std::vector<std::string> failures;   // one report per mismatching program
  std::map<std::string, int> excused;  // explanation id -> programs it excused something in
  NumberStats numbers;
  int views = 0, partial_views = 0, writes_through_views = 0;  // programs (program.h, ViewUse)
};

std::vector<std::filesystem::path> corpus_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator("proptests/conformance/corpus")) {
    if (f.path().extension() == ".txt") files.push_back(f.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

const CorpusRun& corpus_run() {
  static const CorpusRun run = [] {
    CorpusRun r;
    for (const auto& file : corpus_files()) {
      for (const CorpusEntry& entry : read_corpus_file(file.string())) {
        ++r.programs;
        const ViewUse use = view_use(entry.program);
        r.views += use.views;
        r.partial_views += use.partial_views;
        r.writes_through_views += use.partial_views && use.writes_through_views;
        // A hang fails the program (the hung thread is left behind, blocked).
        const Records actual =
            run_on_engine_with_timeout(entry.program, 30).value_or(hang_records());
        const Comparison c = compare(entry.program, entry.expected, actual);
        r.numbers.numbers += c.numbers.numbers;
        r.numbers.bitwise += c.numbers.bitwise;
        r.numbers.max_error = std::max(r.numbers.max_error, c.numbers.max_error);
        for (const auto& [id, n] : c.deviations) ++r.excused[id];
        if (!c.ok()) {
          r.failures.push_back("program " + entry.id + " (" + file.filename().string() + ")\n" +
                               to_text(entry.program) + explain(c));
        }
      }
    }
    std::printf(
        "%d programs; %lld numbers compared, %lld bitwise equal, largest difference "
        "%.3g of the tolerance\n",
        r.programs, static_cast<long long>(r.numbers.numbers),
        static_cast<long long>(r.numbers.bitwise), r.numbers.max_error);
    std::printf(
        "%d programs make view ops, %d partial views (select, slice...), %d partial views and "
        "in-place writes through views (%.0f%%)\n",
        r.views, r.partial_views, r.writes_through_views,
        100.0 * r.writes_through_views / std::max(r.programs, 1));
    for (const auto& [id, n] : r.excused)
      std::printf("  %-30s excused lines in %d programs\n", id.c_str(), n);
    return r;
  }();
  return run;
}

TEST(Corpus, HasAtLeast2000Programs) { EXPECT_GE(corpus_run().programs, 2000); }

// The view ops and the writes through them (issue 44): at least a third of the programs make a
// partial view and write in place through a view.
TEST(Corpus, AThirdOfTheProgramsWriteThroughPartialViews) {
  const CorpusRun& r = corpus_run();
  EXPECT_GE(3 * r.writes_through_views, r.programs);
}

TEST(Corpus, EveryProgramAgreesWithPyTorch) {
  const CorpusRun& r = corpus_run();
  for (size_t i = 0; i < std::min<size_t>(r.failures.size(), 10); ++i) {
    ADD_FAILURE() << r.failures[i];
  }
  EXPECT_EQ(r.failures.size(), 0u) << "programs whose records differ from PyTorch's";
}

// A comparison rule that excuses nothing in the corpus hides nothing and cannot be checked: an
// open bug that no longer occurs was fixed (delete its entry and rule), a deviation that no
// longer occurs is dead.
TEST(Corpus, EveryComparisonRuleIsNeeded) {
  const CorpusRun& r = corpus_run();
  for (const Explanation& x : explanations()) {
    if (x.where != AppliedWhere::kComparing) continue;
    EXPECT_GT(r.excused.count(x.id), 0u)
        << x.id << " excuses nothing in the corpus: "
        << (x.kind == ExplanationKind::kOpenBug
                ? "fixed? delete it from DEVIATIONS.md and deviations.cc"
                : "delete it, or regenerate the corpus");
  }
}

// The deviations applied where the scripts are rendered: each shapes the script of some corpus
// program (rendering needs no PyTorch), so none is dead.
TEST(Corpus, EveryRenderingDeviationIsUsed) {
  const std::map<std::string, int64_t> before = deviation_uses();
  for (const auto& file : corpus_files()) {
    for (const CorpusEntry& entry : read_corpus_file(file.string()))
      torch_script(entry.program, entry.id);
  }
  const std::map<std::string, int64_t> after = deviation_uses();
  for (const Explanation& x : explanations()) {
    if (x.where != AppliedWhere::kRendering) continue;
    const int64_t used =
        (after.count(x.id) ? after.at(x.id) : 0) - (before.count(x.id) ? before.at(x.id) : 0);
    EXPECT_GT(used, 0) << x.id << " shapes no script of the corpus";
  }
}

}  // namespace
}  // namespace ag::proptests
