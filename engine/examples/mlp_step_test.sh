#!/usr/bin/env bash
# The example trains: it prints six loss lines and the last loss is below a third of the first.
set -euo pipefail
out=$("$TEST_SRCDIR/$TEST_WORKSPACE/engine/examples/mlp_step")
echo "$out"
[[ $(grep -c '^step' <<<"$out") -eq 6 ]]
first=$(grep '^step' <<<"$out" | head -1 | awk '{print $4}')
last=$(grep '^step' <<<"$out" | tail -1 | awk '{print $4}')
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f / 3) }'
