#include "proptests/rapidcheck_runner.h"

#include <rapidcheck.h>
#include <rapidcheck/detail/Property.h>
#include <rapidcheck/detail/TestMetadata.h>
#include <rapidcheck/detail/TestParams.h>

#include <sstream>

namespace rc::detail {
// RapidCheck's entry point for checking one property with given parameters. It is declared in
// RapidCheck's src/detail/Testing.h, which Debian's librapidcheck-dev does not install; the
// definition is in librapidcheck.a.
TestResult checkProperty(const Property& property, const TestMetadata& metadata,
                         const TestParams& params);
}  // namespace rc::detail

namespace ag::proptests {

BatchResult run_batch(const NamedProperty& property, uint64_t seed, int cases, int max_size,
                      bool shrink) {
  rc::detail::TestParams params;
  params.disableShrinking = !shrink;
  params.seed = seed;
  params.maxSuccess = cases;
  params.maxSize = max_size;
  const rc::detail::TestResult result = rc::detail::checkProperty(
      rc::detail::toProperty(property.body), {property.name, property.name}, params);
  BatchResult out;
  rc::detail::SuccessResult success;
  rc::detail::FailureResult failure;
  if (result.match(success)) {
    out.cases = success.numSuccess;
    for (const auto& [tags, count] : success.distribution) {
      for (const std::string& tag : tags) out.tags[tag] += count;
    }
    return out;
  }
  out.passed = false;
  std::ostringstream os;
  if (result.match(failure)) {
    out.cases = failure.numSuccess;
    rc::detail::printResultMessage(failure, os);
  } else {
    rc::detail::printResultMessage(result, os);
  }
  out.failure = os.str();
  return out;
}

const NamedProperty* find_property(const std::string& name) {
  for (const NamedProperty& p : property_registry()) {
    if (p.name == name || p.name.substr(p.name.find('.') + 1) == name) return &p;
  }
  return nullptr;
}

}  // namespace ag::proptests
