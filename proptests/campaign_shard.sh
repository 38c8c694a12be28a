#!/usr/bin/env bash
# One shard of a campaign target of proptests/campaign.bzl: runs //proptests:campaign_test's binary
# with Bazel's shard index made campaign-wide. A campaign of more shards than Bazel allows one
# target (50) is PARTS targets of the same shard count; shard k of part P is shard
# P * TEST_TOTAL_SHARDS + k of PARTS * TEST_TOTAL_SHARDS.
#
#   campaign_shard.sh BINARY PART PARTS
set -euo pipefail
binary=$1 part=$2 parts=$3
if ((${TEST_TOTAL_SHARDS:-0} > 0)); then
  export GTEST_TOTAL_SHARDS=$((parts * TEST_TOTAL_SHARDS))
  export GTEST_SHARD_INDEX=$((part * TEST_TOTAL_SHARDS + TEST_SHARD_INDEX))
fi
exec "$binary" --gtest_filter='AllProperties/Campaign.*'
