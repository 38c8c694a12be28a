#!/usr/bin/env bash
# Re-runs every catalogued repro of a foreign engine's bug (paper/results/foreign_findings.md;
# the scripts are paper/results/foreign_findings/*.py, each `import torch` and a few lines) against
# whatever PyTorch is installed, each in a fresh process, and prints per finding "still fails" or
# "fixed", so that a user sees when a release fixes one.
#   tools/rerun_foreign_findings.sh [--python PY] [--timeout S] [SCRIPT...]
# PY: $AG_PEER_PYTHON, else the peers' venv (tools/setup.sh --peers), else python3.
# A script still fails when its process dies by a signal (a crash or an abort), runs past the
# time limit (a hang), or writes PyTorch's "INTERNAL ASSERT FAILED" or an AssertionError (the
# script's own check of a wrong value) on stderr. Anything else, an ordinary error included,
# counts as fixed. The exit status is the number of scripts that still fail (at most 100).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

python="${AG_PEER_PYTHON:-}"
if [[ -z "$python" ]]; then
  venv="${AG_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/autograd-peers}/venv/bin/python"
  if [[ -x "$venv" ]]; then python="$venv"; else python=python3; fi
fi
timeout_s=60
scripts=()
while (($#)); do
  case "$1" in
    --python) python="$2"; shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *)
      [[ -f "$1" ]] || { echo "rerun_foreign_findings: no such script: $1" >&2; exit 102; }
      scripts+=("$1"); shift ;;
  esac
done
if ((${#scripts[@]} == 0)); then
  mapfile -t scripts < <(ls "$root"/paper/results/foreign_findings/*.py 2>/dev/null)
fi
if ((${#scripts[@]} == 0)); then
  echo "rerun_foreign_findings: no scripts (paper/results/foreign_findings/*.py)" >&2
  exit 0
fi

version="$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null)" || {
  echo "rerun_foreign_findings: $python cannot import torch (tools/setup.sh --peers)" >&2
  exit 101
}
echo "torch $version ($python)"

failing=0
err="$(mktemp)"
trap 'rm -f "$err"' EXIT
for script in "${scripts[@]}"; do
  # In a subshell of its own, whose report of a killed child ("Segmentation fault") is dropped.
  (timeout -s KILL "$timeout_s" "$python" "$script" >/dev/null 2>"$err"; exit $?) 2>/dev/null
  rc=$?
  if ((rc == 137)); then
    verdict="still fails (no result within ${timeout_s} s)"
  elif ((rc > 128)); then
    verdict="still fails (signal $((rc - 128)))"
  elif grep -q "INTERNAL ASSERT FAILED" "$err"; then
    verdict="still fails (internal assert: $(grep -m1 -o '[^:]*INTERNAL ASSERT FAILED' "$err" | sed 's/^ *//'))"
  elif grep -q "^AssertionError" "$err"; then
    verdict="still fails (wrong value: $(grep -m1 '^AssertionError' "$err"))"
  else
    verdict="fixed (exit status $rc)"
  fi
  [[ "$verdict" == still* ]] && failing=$((failing + 1))
  printf '%-50s %s\n' "$(basename "$script")" "$verdict"
done
echo "$failing of ${#scripts[@]} still fail"
exit $((failing > 100 ? 100 : failing))
