#!/usr/bin/env bash
# A fuzz campaign on remote execution: //proptests:campaign_test, sharded, every action run by a
# Remote Execution API cluster, the shards' results merged into one report.
#
#   tools/remote_campaign.sh [--workers N] [--shards N] [--cases N] [--seed S]  loopback cluster
#   tools/remote_campaign.sh --executor HOST:PORT [--tls] [--tls-ca FILE]       a real cluster
#       [--tls-client-cert FILE --tls-client-key FILE] [--instance NAME] [--shards N] [--cases N]
#       [--seed S]
#
# Without --executor it starts a stand-in cluster on 127.0.0.1 (tools/remote/cluster.sh):
# PostgreSQL, a BuildGrid server and N workers (tools/remote/worker.py), and stops all of them on
# exit, Ctrl-C or failure. Then it runs
#   bazel test -c opt //proptests:campaign_test --remote_executor=... \
#       --test_env=CAMPAIGN_CASES=N --test_env=CAMPAIGN_SEED=S --test_env=CAMPAIGN_SLICES=4
# in a Bazel of its own (own output base, so it never disturbs `bazel` in this tree), prints
# Bazel's progress and which worker runs which shard, how many actions ran remotely, and the
# merged report (tools/remote/campaign_report.py): coverage, and every failure with its shard,
# seed and replay command. The report is written to paper/results/remote_campaign.md.
#
# Other options:
#   --shards N         Bazel shards (default 4: //proptests:campaign_test); another count runs
#                      //proptests:campaign_test_N_shards, one of the counts listed in proptests/BUILD
#                      (more than 50 are targets of 50: Bazel 4.2.3's limit per target)
#   --slices S         slices per property (default: 4, or N when --shards N is more); with S = N
#                      shard k runs slice k of every property
#   --cases N          cases per (property, slice); with --against, programs per shard
#   --against pytorch  the fuzz driver's --against campaign instead: each shard of
#                      //proptests:against_campaign_test_N_shards runs one batch of conformance
#                      programs against PyTorch; the report merges the crashes by signature
#                      (default report: paper/results/remote_against_campaign.md)
#   --python PATH      with --against: the interpreter with PyTorch, reachable on the workers
#                      (default: $AG_PEER_PYTHON, else ~/.cache/autograd-peers/venv/bin/python)
#   --jobs N           Bazel's --jobs (default 32)
#   --report FILE      where the Markdown report goes ("" for nowhere)
#   --output-base DIR  the campaign's Bazel output base (default: one per tree, in the cache folder)
#   --kill-worker I    fault injection: SIGKILL worker-I (and the test it runs) as soon as it starts
#                      a campaign shard; the server gives the lost lease to another worker
#   --local            no remote execution: the same campaign as plain local `bazel test`
#   --bazel-flag FLAG  one more flag for `bazel test` (repeatable), e.g. --remote_header=...
#   --keep             keep the cluster's folder (logs, CAS, database) after the run
# Exit status: Bazel's, or the report's when Bazel passed (2: a slice is missing or short).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source tools/remote/cluster.sh

original_args=("$@")
workers=2 shards=4 slices="" against="" python=${AG_PEER_PYTHON:-$HOME/.cache/autograd-peers/venv/bin/python} cases=200 seed=1 jobs=32 executor="" tls=0 instance="" kill_worker="" local_only=0 keep=0
report=default
output_base=$AG_REMOTE_CACHE/bazel-$(pwd | sha256sum | cut -c1-12)
tls_flags=() extra_flags=()
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d;s/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case "$1" in
    --workers) workers=$2; shift ;;
    --shards) shards=$2; shift ;;
    --slices) slices=$2; shift ;;
    --cases) cases=$2; shift ;;
    --against) against=$2; shift ;;
    --python) python=$2; shift ;;
    --seed) seed=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --executor) executor=$2; shift ;;
    --tls) tls=1 ;;
    --tls-ca) tls_flags+=("--tls_certificate=$2"); shift ;;
    --tls-client-cert) tls_flags+=("--tls_client_certificate=$2"); shift ;;
    --tls-client-key) tls_flags+=("--tls_client_key=$2"); shift ;;
    --instance) instance=$2; shift ;;
    --report) report=$2; shift ;;
    --output-base) output_base=$2; shift ;;
    --kill-worker) kill_worker=$2; shift ;;
    --local) local_only=1 ;;
    --bazel-flag) extra_flags+=("$2"); shift ;;
    --keep) keep=1 ;;
    -h | --help) usage ;;
    *) echo "remote_campaign.sh: unknown argument: $1" >&2; usage ;;
  esac
  shift
done
slices=${slices:-$((shards > 4 ? shards : 4))}
for n in "$workers" "$shards" "$slices" "$cases" "$seed" "$jobs"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "remote_campaign.sh: not a number: $n" >&2; exit 2; }
done
# The campaign's test target: campaign_test itself has 4 shards, the others are in proptests/BUILD.
target=//proptests:campaign_test
((shards == 4)) || target=//proptests:campaign_test_${shards}_shards
title="Remote fuzz campaign"
if [[ -n "$against" ]]; then
  [[ "$against" == pytorch ]] || { echo "remote_campaign.sh: --against knows only pytorch" >&2; exit 2; }
  [[ -x "$python" ]] || { echo "remote_campaign.sh: no interpreter at $python (--python)" >&2; exit 2; }
  target=//proptests:against_campaign_test_${shards}_shards
  title="Remote --against $against campaign"
  extra_flags+=(--test_env=CAMPAIGN_AGAINST_PYTHON="$python")
fi
if [[ "$report" == default ]]; then
  report=paper/results/remote_campaign.md
  [[ -n "$against" ]] && report=paper/results/remote_against_campaign.md
fi
if [[ -n "$kill_worker" ]] && { [[ -n "$executor" ]] || ((local_only)) || ! ((kill_worker < workers)); }; then
  echo "remote_campaign.sh: --kill-worker I needs the loopback cluster and 0 <= I < --workers" >&2
  exit 2
fi

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/ag-remote.XXXXXX")
chmod 755 "$run_dir"  # PostgreSQL runs as the postgres user, in here
CLUSTER_DIR=$run_dir/cluster
bazel_startup=(--output_base="$output_base" --max_idle_secs=600)
background=()  # PIDs of this script's own background helpers
cleanup() {
  local rc=$? pid
  trap - EXIT INT TERM
  for pid in "${background[@]}"; do kill "$pid" 2>/dev/null || true; done
  cluster_stop
  bazel "${bazel_startup[@]}" shutdown 2>/dev/null || true
  if ((keep)); then cluster_log "kept $run_dir"; else rm -rf "$run_dir"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Where the actions run.
remote_flags=()
if ((local_only)); then
  where="locally"
elif [[ -n "$executor" ]]; then
  remote_flags=(--remote_executor="$([[ $tls == 1 ]] && echo grpcs || echo grpc)://$executor" "${tls_flags[@]}")
  where="on $executor"
else
  cluster_prerequisites 600 || { cluster_log "ERROR: $CLUSTER_SKIP_REASON"; exit 1; }
  cluster_start "$workers"
  remote_flags=(--remote_executor="$CLUSTER_EXECUTOR")
  where="on the loopback cluster ($CLUSTER_EXECUTOR, $workers workers)"
  # Which worker runs which shard, as it happens (a session of its own: cluster_stop ends it).
  setsid bash -c 'tail -q -n +1 -F "$@" 2>/dev/null | grep --line-buffered " shard " | sed -u "s/^/  /"' \
    _ "$CLUSTER_DIR"/worker-*.log &
  monitor=$!
  CLUSTER_SESSIONS+=("$monitor")
fi
[[ -n "$instance" ]] && remote_flags+=(--remote_instance_name="$instance")

# --kill-worker: as soon as worker-I has started a campaign shard, kill it (and that test) at once.
if [[ -n "$kill_worker" ]]; then
  (
    log=$CLUSTER_DIR/worker-$kill_worker.log
    until started=$(grep -m1 -E 'started: //proptests:campaign_test[a-z0-9_]* shard' "$log"); do sleep 0.1; done
    worker_kill "$kill_worker"
    lease=$(sed -E 's/.*lease ([^ ]+) started.*/\1/' <<<"$started")
    finished=$(grep -c "lease $lease finished" "$log" || true)
    echo "$lease $finished ${started##* shard }" >"$run_dir/killed"
    cluster_log "killed worker-$kill_worker while it ran campaign shard ${started##* shard } (lease $lease)"
  ) &
  background+=($!)
fi

config=(-c opt --disk_cache= --symlink_prefix=/)  # no disk cache, no bazel-* links in this tree
((local_only)) || remote_flags+=(--jobs="$jobs")  # local actions: Bazel's default, one per core
flags=("${config[@]}" "${remote_flags[@]}" --nocache_test_results
  --test_env=CAMPAIGN_CASES="$cases" --test_env=CAMPAIGN_SEED="$seed" --test_env=CAMPAIGN_SLICES="$slices"
  --build_event_json_file="$run_dir/bep.json" --show_progress --show_progress_rate_limit=15
  "${extra_flags[@]}")
# The target's test logs, one folder per test target (one, or the parts of a campaign of more than
# 50 shards); results of an earlier run in this output base must not pass for this run's.
if ! tests=$(bazel "${bazel_startup[@]}" query "tests($target)" 2>"$run_dir/query.log"); then
  cat "$run_dir/query.log" >&2
  echo "remote_campaign.sh: no campaign of $shards shards ($target); add $shards to the list in proptests/BUILD" >&2
  exit 2
fi
testlogs_root=$(bazel "${bazel_startup[@]}" info "${config[@]}" bazel-testlogs 2>/dev/null)
testlogs=()
for t in $tests; do testlogs+=("$testlogs_root/proptests/${t#//proptests:}"); done
binary=$(bazel "${bazel_startup[@]}" info "${config[@]}" bazel-bin 2>/dev/null)/proptests/campaign_test
rm -rf "${testlogs[@]}"
if [[ -n "$against" ]]; then
  cluster_log "campaign: $target, $shards shards, seed $seed, $cases programs per shard, $where"
else
  cluster_log "campaign: $target, $shards shards, $slices slices per property, seed $seed, $cases cases per slice, $where"
fi
set +e
bazel "${bazel_startup[@]}" test "${flags[@]}" "$target" 2>&1 | tee "$run_dir/bazel.log"
bazel_rc=${PIPESTATUS[0]}
set -e
[[ -n "${monitor:-}" ]] && stop_session "$monitor"

processes=$(grep -m1 -E '^INFO: [0-9]+ process' "$run_dir/bazel.log" || true)
remote=$(grep -oE '[0-9]+ remote' <<<"$processes" | cut -d' ' -f1)
cluster_log "${remote:-0} actions ran remotely (Bazel: ${processes#INFO: })"

# The lease --kill-worker took down: which worker ran it again, and what the scheduler recorded.
if [[ -f "$run_dir/killed" ]]; then
  read -r lease finished_before shard <"$run_dir/killed"
  rerun=$(grep -h "lease $lease finished" "$CLUSTER_DIR"/worker-*.log | grep -v "^.* worker-$kill_worker:" | head -1)
  read -r tries status <<<"$(cluster_sql "select n_tries, status_code from jobs where name = '$lease'")"
  echo "retry: shard=$shard lease=$lease killed_on=worker-$kill_worker finished_before_kill=$finished_before" \
    "rerun_by=$(sed -nE 's/.* (worker-[0-9]+): .*/\1/p' <<<"$rerun") rerun_exit=${rerun##*exit }" \
    "scheduler_tries=$tries scheduler_status=$status" | tee "$run_dir/retry"
fi

# Merge the shards' results.
report_rc=1
if [[ -n "$against" && -d "${testlogs[0]}" ]]; then
  # One test case per shard (proptests/against_shard.py), in --gtest_list_tests' format.
  { echo "AgainstCampaign."; for ((k = 0; k < shards; k++)); do echo "  Against/pytorch_$k"; done; } \
    >"$run_dir/expected.txt"
fi
if [[ -d "${testlogs[0]}" ]] && { [[ -n "$against" ]] || [[ -x "$binary" ]]; }; then
  [[ -n "$against" ]] || CAMPAIGN_SLICES=$slices "$binary" --gtest_list_tests \
    --gtest_filter='AllProperties/Campaign.*' >"$run_dir/expected.txt"
  if ((keep)) && ((${#testlogs[@]} == 1)); then
    cp -r "${testlogs[0]}" "$run_dir/testlogs"
  elif ((keep)); then
    mkdir "$run_dir/testlogs" && cp -r "${testlogs[@]}" "$run_dir/testlogs/"
  fi
  command="tools/remote_campaign.sh $(printf '%q ' "${original_args[@]:-}")"
  notes=("Command: \`${command% }\`, commit $(git rev-parse --short HEAD), $(date -u +%Y-%m-%d)."
    "Actions ran $where.")
  [[ -f "$run_dir/retry" ]] && notes+=("Worker killed mid-run: $(cat "$run_dir/retry")")
  set +e
  python3 tools/remote/campaign_report.py "${testlogs[@]/#/--testlogs=}" --shards "$shards" \
    --expected "$run_dir/expected.txt" --cases "$cases" --title "$title" --bazel-log "$run_dir/bazel.log" --bep "$run_dir/bep.json" \
    ${report:+--out "$report"} "${notes[@]/#/--note=}"
  report_rc=$?
  set -e
  [[ -n "$report" ]] && cluster_log "report written to $report"
fi
((bazel_rc != 0)) && exit "$bazel_rc"
exit "$report_rc"
