#pragma once

// Compares a program's records from this engine with the expected ones, line by line
// (records.h), applying the listed deviations (DEVIATIONS.md) and nothing else.

#include <map>
#include <string>
#include <vector>

#include "proptests/conformance/program.h"
#include "proptests/conformance/records.h"

namespace ag::conformance {

struct Mismatch {
  size_t line = 0;  // index into the expected lines
  std::string expected, actual;
};

struct Comparison {
  std::vector<Mismatch> mismatches;  // at most one: the programs' states diverge after it
  NumberStats numbers;
  std::map<std::string, int> deviations;  // deviation id -> lines it excused
  bool ok() const { return mismatches.empty(); }
};

Comparison compare(const Program& program, const Records& expected, const Records& actual,
                   const Tolerance& tolerance = {});

// The first mismatch, for people.
std::string explain(const Comparison& c);

}  // namespace ag::conformance
