#pragma once

// What a fuzz campaign has covered: properties report each case's graph (kind and size) and
// labels such as the op kinds it used and the option combinations it ran under.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace ag::proptests {

class FuzzStats {
 public:
  // kind: "dag" (engine graphs, size = values), "ir" (JIT graphs, size = nodes), "ops".
  void record_graph(const std::string& kind, int64_t size);
  // category: "op", "options", ...
  void record(const std::string& category, const std::string& label);

  struct Snapshot {
    int64_t graphs = 0;
    int64_t largest = 0;
    std::map<std::string, std::map<std::string, int64_t>> counts;  // category -> label -> n
  };
  Snapshot snapshot() const;
  // Forgets everything recorded so far (the campaign test reports each slice on its own).
  void reset();

 private:
  mutable std::mutex mutex_;
  Snapshot data_;
};

FuzzStats& fuzz_stats();

}  // namespace ag::proptests
