"""campaign_shards: a sharded campaign with the shard count as a target of its own."""

# Bazel 4.2.3 rejects a shard_count above 50 ("indicative of poor test organization").
MAX_SHARDS_PER_TARGET = 50

def _campaign_part(name, script, binary, part, parts, shards):
    native.sh_test(
        name = name,
        size = "medium",
        srcs = [script],
        args = ["$(rootpath %s)" % binary, str(part), str(parts)],
        data = [binary],
        shard_count = shards,
        tags = ["manual"],  # a campaign is run on purpose (tools/remote_campaign.sh), not by //...
    )

def campaign_shards(name, binary, shards, script = "campaign_shard.sh"):
    """The campaign that `script` runs with `binary`, in `shards` Bazel shards.

    Up to 50 shards: one sh_test of that shard_count. More: a test_suite of shards / 50 sh_tests
    named NAME_part_P, 50 shards each, which the script numbers campaign-wide (its arguments:
    BINARY PART PARTS). Every target of a binary runs the same binary, so another shard count
    compiles nothing. All are tagged manual.

    Args:
      name: the target (tools/remote_campaign.sh --shards N runs campaign_test_N_shards).
      binary: the campaign's binary (campaign_test, or the fuzz driver for --against).
      shards: the number of shards; above 50, a multiple of 50.
      script: the sh_test's script: campaign_shard.sh, or against_shard.py.
    """
    if shards <= MAX_SHARDS_PER_TARGET:
        _campaign_part(name, script, binary, 0, 1, shards)
        return
    if shards % MAX_SHARDS_PER_TARGET:
        fail("campaign_shards: %d shards is above %d and not a multiple of it" %
             (shards, MAX_SHARDS_PER_TARGET))
    parts = shards // MAX_SHARDS_PER_TARGET
    names = ["%s_part_%d" % (name, p) for p in range(parts)]
    for p in range(parts):
        _campaign_part(names[p], script, binary, p, parts, MAX_SHARDS_PER_TARGET)
    native.test_suite(name = name, tests = names, tags = ["manual"])
