#include "proptests/fuzz_stats.h"

namespace ag::proptests {

void FuzzStats::record_graph(const std::string& kind, int64_t size) {
  const char* range = size < 10   ? "0-9"
                      : size < 20 ? "10-19"
                      : size < 40 ? "20-39"
                      : size < 80 ? "40-79"
                                  : "80+";
  std::lock_guard<std::mutex> lock(mutex_);
  ++data_.graphs;
  if (size > data_.largest) data_.largest = size;
  ++data_.counts["graph size"][kind + " " + range];
}

void FuzzStats::record(const std::string& category, const std::string& label) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++data_.counts[category][label];
}

FuzzStats::Snapshot FuzzStats::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return data_;
}

void FuzzStats::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  data_ = {};
}

FuzzStats& fuzz_stats() {
  static FuzzStats stats;
  return stats;
}

}  // namespace ag::proptests
