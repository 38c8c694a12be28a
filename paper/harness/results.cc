#include "paper/harness/results.h"

#include <cmath>
#include <fstream>
#include <iomanip>
#include <set>

namespace ag::paper {

void Results::add(const std::string& workload, const std::string& variant,
                  const std::string& metric, double value, const std::string& unit) {
  figures_.push_back({workload, variant, metric, value, unit});
}

double Results::get(const std::string& workload, const std::string& variant,
                    const std::string& metric) const {
  for (const Figure& f : figures_) {
    if (f.workload == workload && f.variant == variant && f.metric == metric) return f.value;
  }
  return std::nan("");
}

void Results::write_tsv(const std::filesystem::path& path, bool keep_other_workloads) const {
  std::vector<std::string> kept;
  if (keep_other_workloads) {
    std::set<std::string> measured;
    for (const Figure& f : figures_) measured.insert(f.workload);
    std::ifstream in(path);
    std::string line;
    for (bool header = true; std::getline(in, line); header = false) {
      if (!header && !measured.count(line.substr(0, line.find('\t')))) kept.push_back(line);
    }
  }
  std::ofstream out(path);
  out << "workload\tvariant\tmetric\tvalue\tunit\tdevice\n";
  for (const std::string& line : kept) out << line << '\n';
  for (const Figure& f : figures_) {
    out << f.workload << '\t' << f.variant << '\t' << f.metric << '\t' << std::setprecision(6)
        << f.value << '\t' << f.unit << '\t' << device_ << '\n';
  }
}

}  // namespace ag::paper
