#pragma once

// Groups mismatching programs by where they first differ (statement kind and what differs), so
// a run over many programs reads as a short list of distinct problems with example programs.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proptests/conformance/comparison.h"
#include "proptests/conformance/program.h"

namespace ag::proptests {

// E.g. "mul_: values of the target", "backward: .grad", "grad: raises here only".
std::string mismatch_class(const ConformanceProgram& program, const Mismatch& mismatch);

class Triage {
 public:
  void add(const std::string& id, const ConformanceProgram& program, const Comparison& comparison);
  int64_t programs() const { return programs_; }
  int64_t mismatches() const { return mismatching_; }
  // Counts per class with up to 5 example ids, then numbers compared, bitwise share, largest
  // error relative to the tolerance, and how often each deviation excused a difference.
  std::string report() const;

 private:
  int64_t programs_ = 0, mismatching_ = 0;
  NumberStats numbers_;
  std::map<std::string, int64_t> deviations_;  // explanation -> lines excused
  std::map<std::string, int64_t> stopped_;     // explanation -> programs it ended early
  std::map<std::string, std::vector<std::string>> examples_;  // explanation -> program ids
  std::map<std::string, std::vector<std::string>> classes_;
};

}  // namespace ag::proptests
