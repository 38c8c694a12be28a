// The one table writer of paper/results: numbers formatted alike everywhere, Markdown tables,
// and the report files (one per seed) with their shared header.
#pragma once

#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace ag::paper {

// 3 significant digits, no exponent between 1e-3 and 1e6; "n/a" for NaN.
std::string format(double v, int precision = 3);
// format(v) + " " + unit; "n/a" for NaN.
std::string with_unit(double v, const std::string& unit);
// "0.87x"; "n/a" when either side is missing or zero.
std::string ratio(double numerator, double denominator);
// "0.51x - 0.77x", a range of ratios; "n/a" when the low end is missing.
std::string ratio_range(double low, double high);
// A peer's cell: "18.7 ms (0.87x)", its time and ours / its; `missing` when it has none.
std::string peer_cell(std::optional<double> peer, double ours, const std::string& unit,
                      const std::string& missing);

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  std::string str() const;  // first column left-aligned, the others right-aligned

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// One results file (paper/results/seed_NNN_*.md): a title and a body that sections append to (empty
// when the run skips the seed).
struct Report {
  std::string file, title;
  std::ostringstream body;
};

struct RunInfo {
  bool quick = false;
  std::string arguments;  // reproduce's, as given ("--busy all --only 001"), for the command line
  std::string device;
  std::string threads;     // "2 threads (ours and every peer)"
  std::string conditions;  // "quiet" or "quiet, then busy: ..."
};

// The paragraph every report starts with: command, date, machine, build, load.
std::string header_block(const RunInfo& info);

// Writes each non-empty report to `out`/file (and prints it). With `paper_md`, also replaces the
// text between its BEGIN/END GENERATED RESULTS markers with every report file now in `out`, the
// ones this run wrote and the ones an earlier run did (images under results/).
void write_reports(const std::vector<Report>& reports, const RunInfo& info,
                   const std::filesystem::path& out, const std::filesystem::path* paper_md);

}  // namespace ag::paper
