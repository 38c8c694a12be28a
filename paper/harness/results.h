// Every figure of one reproduce run, written as figures.tsv (one row per figure: workload,
// variant, metric, value, unit, device). paper/plot.py draws the metrics named "name@key=x".
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ag::paper {

struct Figure {
  std::string workload, variant, metric;
  double value = 0;
  std::string unit;
};

class Results {
 public:
  explicit Results(std::string device) : device_(std::move(device)) {}

  void add(const std::string& workload, const std::string& variant, const std::string& metric,
           double value, const std::string& unit);
  // The value of a figure added before, or NaN.
  double get(const std::string& workload, const std::string& variant,
             const std::string& metric) const;
  size_t size() const { return figures_.size(); }

  // Writes every figure. With keep_other_workloads (a run of some seeds only, `--only`), the
  // rows already in the file whose workload this run did not measure stay, before this run's.
  void write_tsv(const std::filesystem::path& path, bool keep_other_workloads = false) const;

 private:
  std::string device_;
  std::vector<Figure> figures_;
};

}  // namespace ag::paper
