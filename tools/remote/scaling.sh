#!/usr/bin/env bash
# Campaign throughput (cases/s) on the loopback cluster with 1, 2 and 4 workers against plain
# local `bazel test`, on the same machine, interleaved round by round (the machine is shared).
#
#   tools/remote/scaling.sh [--cases N] [--rounds R] [--out paper/results/remote_campaign_scaling.md]
#
# The campaign binary is built once first, so every measured `bazel test -c opt
# //proptests:campaign_test` runs only the 4 test shards; each run has a seed of its own, so
# no result comes from a cache. cases/s = slices*N cases / wall time of that `bazel test` command
# (Bazel's fixed cost per command included, the same for every configuration).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source tools/remote/cluster.sh

cases=400 rounds=2 out=paper/results/remote_campaign_scaling.md
while (($#)); do
  case "$1" in
    --cases) cases=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "scaling.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
CONFIGS=(local 1 2 4)  # "local", or a number of workers

work=$(mktemp -d "${TMPDIR:-/tmp}/ag-remote-scaling.XXXXXX")
chmod 755 "$work"
CLUSTER_DIR=$work/cluster
startup=(--output_base="$work/ob" --max_idle_secs=600)
config=(-c opt --disk_cache= --symlink_prefix=/)
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  cluster_stop
  bazel "${startup[@]}" shutdown 2>/dev/null || true
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cluster_prerequisites 600 || { cluster_log "ERROR: $CLUSTER_SKIP_REASON"; exit 1; }
cluster_start 0
cluster_log "building the campaign once"
bazel "${startup[@]}" build "${config[@]}" //proptests:campaign_test >"$work/build.log" 2>&1 ||
  { tail -20 "$work/build.log"; exit 1; }
binary=$(bazel "${startup[@]}" info "${config[@]}" bazel-bin 2>/dev/null)/proptests/campaign_test
slices=$("$binary" --gtest_list_tests --gtest_filter='AllProperties/Campaign.*' | grep -c '^  ')
total=$((slices * cases))

# run_config CONFIG SEED: one campaign; sets TAKEN to the seconds its `bazel test` took.
run_config() {
  local what=$1 seed=$2 flags=() i t0 t1
  if [[ $what != local ]]; then
    for ((i = 0; i < what; i++)); do worker_start "$i"; done
    for ((i = 0; i < what; i++)); do
      wait_for 60 "worker-$i" grep -q "bot session" "$CLUSTER_DIR/worker-$i.log" || return 1
    done
    flags=(--remote_executor="$CLUSTER_EXECUTOR" --jobs=32)
  fi
  t0=$(date +%s.%N)
  bazel "${startup[@]}" test "${config[@]}" "${flags[@]}" --nocache_test_results \
    --test_env=CAMPAIGN_CASES="$cases" --test_env=CAMPAIGN_SEED="$seed" \
    //proptests:campaign_test >"$work/run.log" 2>&1 || { tail -20 "$work/run.log" >&2; return 1; }
  t1=$(date +%s.%N)
  if [[ $what != local ]]; then
    grep -qE "processes: .*[0-9]+ remote" "$work/run.log" || { echo "no remote test action" >&2; return 1; }
    for ((i = 0; i < what; i++)); do stop_session "$(cat "$CLUSTER_DIR/worker-$i.pid")"; done
  fi
  TAKEN=$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")
}

raw=()
seed=100
for ((r = 1; r <= rounds; r++)); do
  for what in "${CONFIGS[@]}"; do
    seed=$((seed + 1))
    load=$(cut -d' ' -f1 /proc/loadavg)
    run_config "$what" "$seed"
    raw+=("$r $what $seed $TAKEN $load")
    cluster_log "round $r, $what: $total cases in ${TAKEN}s ($(awk "BEGIN { printf \"%.0f\", $total / $TAKEN }") cases/s), load $load"
  done
done

python3 - "$out" "$total" "$cases" "$slices" "$(git rev-parse --short HEAD)" "$(nproc)" "${raw[@]}" <<'PY'
import statistics, sys
out, total, cases, slices, commit, cores = sys.argv[1], int(sys.argv[2]), *sys.argv[3:7]
rows = [r.split() for r in sys.argv[7:]]
names = {"local": "local `bazel test` (no remote)", "1": "1 worker", "2": "2 workers", "4": "4 workers"}
rate = {}
for r, what, seed, s, load in rows:
    rate.setdefault(what, []).append(total / float(s))
local = statistics.median(rate["local"])
lines = [
    "# Remote campaign: cases/s against the number of workers",
    "",
    f"`tools/remote/scaling.sh --cases {cases} --rounds {len(rate['local'])}` at commit {commit}: "
    f"`bazel test -c opt //proptests:campaign_test` with {total} cases ({slices} slices of {cases}, 4 shards), "
    f"the binary built beforehand, on this {cores}-core machine (shared with other builds), "
    "configurations interleaved round by round, a fresh seed per run. cases/s = cases / wall time of "
    "the `bazel test` command.",
    "",
    "| configuration | cases/s (median) | vs local | runs (cases/s) |",
    "|---|---|---|---|",
]
for what in ["local", "1", "2", "4"]:
    v = rate[what]
    lines.append(f"| {names[what]} | {statistics.median(v):.0f} | {statistics.median(v) / local:.2f}x | "
                 + ", ".join(f"{x:.0f}" for x in v) + " |")
lines += ["", "Runs (round, configuration, seed, seconds, load average before the run):", "", "```"]
lines += [" ".join(r) for r in rows] + ["```", ""]
lines += [
    "How to read it: local `bazel test` runs two shards at a time (one per core); n workers run n. "
    "On a machine shared with other builds (see the load averages) the cores are divided among all "
    "runnable processes, so more shards at once also means a larger share of the machine; on an idle "
    "machine, workers beyond the number of cores add nothing. On a cluster each shard gets a machine "
    "of its own, so a campaign takes as long as its slowest shard: up to 4x one worker with the 4 "
    "shards of //proptests:campaign_test; more machines need more shards "
    "(`tools/remote_campaign.sh --shards N`, a count listed in proptests/BUILD).",
    "",
]
with open(out, "w") as f:
    f.write("\n".join(lines))
print("\n".join(lines))
PY
