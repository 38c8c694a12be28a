#pragma once

// Runs one registered property for a batch of cases with explicit parameters (seed, count,
// maximum size), so the fuzz driver and the campaign test can run properties for as long as
// asked, each batch reproducible from its seed.

#include <cstdint>
#include <map>
#include <string>

#include "proptests/property.h"

namespace ag::proptests {

struct BatchResult {
  bool passed = true;
  int cases = 0;                    // successful cases run
  std::string failure;              // RapidCheck's report (shrunk counterexample) when !passed
  std::map<std::string, int> tags;  // RC_TAG/RC_CLASSIFY labels -> cases
};

// `shrink` false: a failing case is reported as generated, not shrunk (RapidCheck's
// disableShrinking), for properties whose every shrinking step is expensive.
BatchResult run_batch(const NamedProperty& property, uint64_t seed, int cases, int max_size,
                      bool shrink = true);

// Finds a property by its full name ("Suite.Name") or by its name alone; null if none.
const NamedProperty* find_property(const std::string& name);

}  // namespace ag::proptests
