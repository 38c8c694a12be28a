#!/usr/bin/env bash
# End-to-end test of tools/remote_campaign.sh: a small campaign (2 workers, 100 cases per slice,
# seed 1) on the loopback cluster, from a fresh output base so that every compile, link and test
# action runs remotely, with worker-1 killed as soon as it starts a campaign shard. It asserts:
#   - the campaign passes, every non-internal action ran remotely, each shard reports "remote";
#   - the kill hit a shard before it finished, and the scheduler ran that lease again on the
#     other worker (BuildGrid re-queues the lease of a worker whose session expired; Bazel's
#     Execute call waits on the same operation), which passed;
#   - no case is lost: every slice that `campaign_test --gtest_list_tests` lists came back once,
#     with all its cases; and the report does catch a lost shard (one shard's XML taken away):
#     its slices are named missing and the shard itself as not reporting;
#   - the tool stopped everything it started (workers, server, PostgreSQL).
# It runs Bazel itself, so it is not a target of `bazel test //...`: .ci/run runs it after the
# suite and counts its test cases (JUnit XML) in the same pass/fail line.
#
#   tools/remote/e2e_test.sh [--junit FILE] [--install-seconds S]
#
# When PostgreSQL or BuildGrid's venv cannot be installed within S seconds (default 420), every
# case is reported as skipped, with the reason, and the exit status is 0.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source tools/remote/cluster.sh

junit="" install_seconds=420
while (($#)); do
  case "$1" in
    --junit) junit=$2; shift ;;
    --install-seconds) install_seconds=$2; shift ;;
    *) echo "e2e_test.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

CASES=100
CHECKS=(campaign_passes all_actions_remote shards_ran_remotely worker_killed_mid_run
  lost_lease_rerun_elsewhere no_case_lost report_catches_a_lost_shard cluster_stopped)
declare -A verdict reason
work=$(mktemp -d "${TMPDIR:-/tmp}/ag-remote-e2e.XXXXXX")
trap 'rm -rf "$work"' EXIT

write_junit() {
  [[ -n "$junit" ]] || return 0
  local failures=0 skipped=0 c
  for c in "${CHECKS[@]}"; do
    [[ ${verdict[$c]} == failed ]] && failures=$((failures + 1))
    [[ ${verdict[$c]} == skipped ]] && skipped=$((skipped + 1))
  done
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo "<testsuite name=\"remote_campaign_e2e\" tests=\"${#CHECKS[@]}\" failures=\"$failures\" skipped=\"$skipped\">"
    for c in "${CHECKS[@]}"; do
      local msg
      msg=$(sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g; s/"/\&quot;/g' <<<"${reason[$c]:-}")
      case ${verdict[$c]} in
        passed) echo "  <testcase classname=\"RemoteCampaign\" name=\"$c\"/>" ;;
        skipped) echo "  <testcase classname=\"RemoteCampaign\" name=\"$c\"><skipped message=\"$msg\"/></testcase>" ;;
        *) echo "  <testcase classname=\"RemoteCampaign\" name=\"$c\"><failure message=\"$msg\"/></testcase>" ;;
      esac
    done
    echo "</testsuite>"
  } >"$junit"
}

check() {  # check NAME CONDITION-STATUS MESSAGE
  if [[ $2 == 0 ]]; then verdict[$1]=passed; else verdict[$1]=failed; fi
  reason[$1]=$3
  printf '%-28s %-7s %s\n' "$1" "${verdict[$1]}" "$3"
}

if ! cluster_prerequisites "$install_seconds"; then
  for c in "${CHECKS[@]}"; do verdict[$c]=skipped reason[$c]=$CLUSTER_SKIP_REASON; done
  echo "remote campaign e2e: SKIPPED: $CLUSTER_SKIP_REASON"
  write_junit
  exit 0
fi

set +e
tools/remote_campaign.sh --workers 2 --cases "$CASES" --seed 1 --kill-worker 1 --keep \
  --output-base "$work/ob" --report "$work/report.md" 2>&1 | tee "$work/campaign.log"
rc=${PIPESTATUS[0]}
set -e
log=$work/campaign.log
echo
echo "remote campaign e2e: checks"

check campaign_passes "$((rc != 0))" "tools/remote_campaign.sh exit $rc; $(grep -m1 '^//proptests:campaign_test' "$log" || echo 'no Bazel test summary')"

# "INFO: 104 processes: 30 internal, 74 remote.": nothing but internal and remote.
processes=$(grep -m1 -E '^INFO: [0-9]+ processes:' "$log" || true)
[[ "$processes" =~ ^INFO:\ [0-9]+\ processes:\ [0-9]+\ internal,\ ([0-9]+)\ remote\.$ ]] &&
  ((BASH_REMATCH[1] >= 5))
check all_actions_remote $? "Bazel: ${processes:-no process summary}"

# Report table rows: | shard | slices | cases | failed | ran | attempt | status |
remote_shards=$(grep -cE '^\| [0-9]+ \| [0-9]+ \| [0-9]+ \| 0 \| remote \| [0-9]+ \| PASSED \|$' "$work/report.md" 2>/dev/null || true)
check shards_ran_remotely "$((remote_shards != 4))" "$remote_shards of 4 shards passed with strategy remote"

retry=$(grep -m1 '^retry: ' "$log" || true)
field() { sed -nE "s/.* $1=([^ ]*).*/\1/p" <<<" $retry"; }
[[ -n "$retry" && "$(field killed_on)" == worker-1 && "$(field finished_before_kill)" == 0 ]]
check worker_killed_mid_run $? "${retry:-worker-1 was not killed}"
[[ "$(field rerun_by)" == worker-0 && "$(field rerun_exit)" == 0 &&
  "$(field scheduler_tries)" -ge 2 && "$(field scheduler_status)" == 0 ]]
check lost_lease_rerun_elsewhere $? "shard $(field shard): rerun by $(field rerun_by), exit $(field rerun_exit); scheduler: $(field scheduler_tries) tries, status $(field scheduler_status)"

# "6400 cases in 64 slices of 64 expected (100 cases per slice), 4 shards: 0 failed, 0 missing, ..."
summary=$(grep -m1 -E '^[0-9]+ cases in [0-9]+ slices of' "$work/report.md" 2>/dev/null || true)
[[ "$summary" =~ ^([0-9]+)\ cases\ in\ ([0-9]+)\ slices\ of\ ([0-9]+)\ expected.*\ 4\ shards:\ 0\ failed,\ 0\ missing,\ 0\ duplicated,\ 0\ short\.$ ]] &&
  ((BASH_REMATCH[3] > 0 && BASH_REMATCH[2] == BASH_REMATCH[3] && BASH_REMATCH[1] == BASH_REMATCH[3] * CASES))
check no_case_lost $? "${summary:-no report}"

# The same report with one shard's results taken away must say which slices are missing.
kept=$(sed -nE 's/.*kept (.*)$/\1/p' "$log" | tail -1)
if [[ -d "$kept/testlogs" && -f "$kept/expected.txt" ]]; then
  cp -r "$kept/testlogs" "$work/lost" && rm -rf "$work/lost/shard_3_of_4"
  set +e
  python3 tools/remote/campaign_report.py --testlogs "$work/lost" --shards 4 \
    --expected "$kept/expected.txt" --cases "$CASES" >"$work/lost.md"
  lost_rc=$?
  set -e
  missing=$(grep -c '^- missing: ' "$work/lost.md" || true)
  [[ $lost_rc == 2 && $missing -gt 0 ]] && grep -q '^- shard 3 of 4 did not report$' "$work/lost.md"
  check report_catches_a_lost_shard $? "without shard 3: report exit $lost_rc, $missing slices named missing, $(grep -c 'did not report' "$work/lost.md") shard"
else
  check report_catches_a_lost_shard 1 "no test logs or expected list to check with"
fi

# Every process the tool started is gone: workers and server (by their PIDs), PostgreSQL.
left=()
pids=0
for pidfile in "$kept"/cluster/*.pid; do
  [[ -f "$pidfile" ]] || continue
  pids=$((pids + 1))
  pgrep -s "$(cat "$pidfile")" >/dev/null && left+=("$(basename "$pidfile" .pid) (session $(cat "$pidfile"))")
done
[[ -f "$kept/cluster/pg/data/postmaster.pid" ]] && left+=("PostgreSQL")
[[ -n "$kept" && $pids == 3 && ${#left[@]} == 0 ]]
check cluster_stopped $? "${left[*]:-$pids sessions (server, 2 workers) and PostgreSQL all stopped}"
[[ -n "$kept" && "$kept" == "${TMPDIR:-/tmp}"/ag-remote.* ]] && rm -rf "$kept"

write_junit
failed=0
for c in "${CHECKS[@]}"; do [[ ${verdict[$c]} == failed ]] && failed=$((failed + 1)); done
echo "remote campaign e2e: $(( ${#CHECKS[@]} - failed )) of ${#CHECKS[@]} checks passed"
((failed == 0))
