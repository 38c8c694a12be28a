#pragma once

// AG_PROPERTY(Suite, Name) { body } defines one property-based test, written with RapidCheck's
// pick syntax (`*gen`) and assertions (RC_ASSERT), and registers it twice:
//   - as a GoogleTest case Suite.Name (RC_GTEST_PROP), run by `bazel test` at RapidCheck's
//     default size and count;
//   - in the process-wide registry that the fuzz driver (//proptests:fuzz) and the sharded
//     campaign test (//proptests:campaign_test) run for as long as asked.
// Libraries that define properties are built with alwayslink so their registrations survive.

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace ag::proptests {

struct NamedProperty {
  std::string name;  // "Suite.Name", as GoogleTest spells it
  void (*body)();
};

std::vector<NamedProperty>& property_registry();
bool register_property(const char* suite, const char* name, void (*body)());

}  // namespace ag::proptests

#define AG_PROPERTY(Suite, Name)                                                 \
  static void Suite##_##Name##_body();                                           \
  RC_GTEST_PROP(Suite, Name, ()) { Suite##_##Name##_body(); }                    \
  [[maybe_unused]] static const bool Suite##_##Name##_registered =               \
      ::ag::proptests::register_property(#Suite, #Name, &Suite##_##Name##_body); \
  static void Suite##_##Name##_body()
