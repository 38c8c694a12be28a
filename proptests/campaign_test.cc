// A fuzz campaign as a sharded Bazel test: one GoogleTest case per (property, slice), so Bazel's
// test sharding (shard_count, or --test_sharding_strategy and remote execution) spreads the
// campaign over cores or machines with no scheduler of our own. Each slice runs
// CAMPAIGN_CASES cases (default 20) with seed CAMPAIGN_SEED + slice (default 1):
//   bazel test -c opt //proptests:campaign_test --test_env=CAMPAIGN_CASES=50000
//       --test_env=CAMPAIGN_SEED=7
#include <gtest/gtest.h>

#include <cstdlib>

#include "proptests/rapidcheck_runner.h"

namespace ag::proptests {
namespace {

constexpr int kSlices = 4;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

class Campaign : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(Campaign, Slice) {
  const auto& [name, slice] = GetParam();
  const NamedProperty* property = find_property(name);
  ASSERT_NE(property, nullptr);
  const uint64_t seed = static_cast<uint64_t>(env_int("CAMPAIGN_SEED", 1)) * 1000 + slice;
  const BatchResult r = run_batch(*property, seed, env_int("CAMPAIGN_CASES", 20), 100);
  EXPECT_TRUE(r.passed) << r.failure << "\nreplay: bazel run -c opt //proptests:fuzz -- --property "
                        << name << " --batch-seed " << seed << " --batch "
                        << env_int("CAMPAIGN_CASES", 20);
}

std::vector<std::tuple<std::string, int>> all_slices() {
  std::vector<std::tuple<std::string, int>> out;
  for (const NamedProperty& p : property_registry()) {
    for (int s = 0; s < kSlices; ++s) out.emplace_back(p.name, s);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllProperties, Campaign, ::testing::ValuesIn(all_slices()),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param) + "_" +
                                           std::to_string(std::get<1>(info.param));
                           for (char& c : n) c = c == '.' ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace ag::proptests
