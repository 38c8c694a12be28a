// A fuzz campaign as a sharded Bazel test: one GoogleTest case per (property, slice), so Bazel's
// test sharding (shard_count, or --test_sharding_strategy and remote execution) spreads the
// campaign over cores or machines with no scheduler of our own. Every property has
// CAMPAIGN_SLICES slices (default 4); each slice runs CAMPAIGN_CASES cases (default 20) with
// RapidCheck seed CAMPAIGN_SEED * 1000 + slice (CAMPAIGN_SEED defaults to 1; with more than 1000
// slices the 1000 is the next power of ten, so no two slices of two campaigns share a seed):
//   bazel test -c opt //proptests:campaign_test --test_env=CAMPAIGN_CASES=50000
//       --test_env=CAMPAIGN_SEED=7
// GoogleTest gives shard k of N the slices whose index in the list below is k mod N, so with
// CAMPAIGN_SLICES = N shard k runs slice k of every property: every shard does the same work.
// The targets of other shard counts (proptests/campaign.bzl) run this binary.
//
// Every slice records in the test's JUnit XML (GoogleTest properties) what it ran and covered:
// property, slice, seed, cases, shard, the replay command and its coverage (graph sizes, op
// kinds, option combinations). The XML comes back from remote execution like any test output,
// and tools/remote/campaign_report.py merges the shards' into one report.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "proptests/fuzz_stats.h"
#include "proptests/rapidcheck_runner.h"

namespace ag::proptests {
namespace {

constexpr int kDefaultSlices = 4;
constexpr int kMaxNodes = 100;  // RapidCheck's size: graphs of up to about this many nodes

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

// "graphs=N;largest=N;CATEGORY/LABEL=N;..." (labels hold neither ';' nor '/').
std::string encode_coverage(const FuzzStats::Snapshot& s) {
  std::string out = "graphs=" + std::to_string(s.graphs) + ";largest=" + std::to_string(s.largest);
  for (const auto& [category, labels] : s.counts) {
    for (const auto& [label, n] : labels) {
      out += ";" + category + "/" + label + "=" + std::to_string(n);
    }
  }
  return out;
}

// CAMPAIGN_SEED * 1000 + slice, or * the next power of ten when there are more than 1000 slices.
uint64_t slice_seed(int slice) {
  uint64_t stride = 1000;
  while (stride < static_cast<uint64_t>(env_int("CAMPAIGN_SLICES", kDefaultSlices))) stride *= 10;
  return static_cast<uint64_t>(env_int("CAMPAIGN_SEED", 1)) * stride + slice;
}

class Campaign : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(Campaign, Slice) {
  const auto& [name, slice] = GetParam();
  const NamedProperty* property = find_property(name);
  ASSERT_NE(property, nullptr);
  const uint64_t seed = slice_seed(slice);
  const int cases = env_int("CAMPAIGN_CASES", 20);
  const std::string replay = "bazel run -c opt //proptests:fuzz -- --property " + name +
                             " --batch-seed " + std::to_string(seed) + " --batch " +
                             std::to_string(cases) + " --max-nodes " + std::to_string(kMaxNodes);
  fuzz_stats().reset();
  const BatchResult r = run_batch(*property, seed, cases, kMaxNodes);
  // Set by Bazel's test runner when sharding; campaign_shard.sh makes it the campaign-wide index.
  const char* shard = std::getenv("GTEST_SHARD_INDEX");
  RecordProperty("property", name);
  RecordProperty("slice", slice);
  RecordProperty("seed", std::to_string(seed));
  RecordProperty("cases", r.cases);
  RecordProperty("shard", shard ? shard : "");
  RecordProperty("replay", replay);
  RecordProperty("coverage", encode_coverage(fuzz_stats().snapshot()));
  EXPECT_TRUE(r.passed) << r.failure << "\nreplay: " << replay;
}

std::vector<std::tuple<std::string, int>> all_slices() {
  std::vector<std::tuple<std::string, int>> out;
  const int slices = env_int("CAMPAIGN_SLICES", kDefaultSlices);
  for (const NamedProperty& p : property_registry()) {
    for (int s = 0; s < slices; ++s) out.emplace_back(p.name, s);
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
