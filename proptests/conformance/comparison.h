#pragma once

// Compares a program's records from this engine with the expected ones, line by line
// (records.h). Where two lines differ, the rules of the listed deviations and open bugs
// (deviations.h, DEVIATIONS.md) may excuse it: skip the expected line, skip both, or stop
// comparing (the two programs' states differ for good after it). Anything else is a mismatch.

#include <map>
#include <string>
#include <vector>

#include "proptests/conformance/program.h"
#include "proptests/conformance/records.h"

namespace ag::proptests {

struct Mismatch {
  size_t line = 0;  // index into the expected lines
  std::string expected, actual;
};

struct Comparison {
  std::vector<Mismatch> mismatches;  // at most one: the programs' states diverge after it
  NumberStats numbers;
  std::map<std::string, int> deviations;  // explanation id -> lines it excused
  std::string stopped_by;  // the explanation that ended the comparison early, if one did
  bool ok() const { return mismatches.empty(); }
};

Comparison compare(const ConformanceProgram& program, const Records& expected,
                   const Records& actual, const Tolerance& tolerance = {});

// The first mismatch, for people.
std::string explain(const Comparison& c);

}  // namespace ag::proptests
