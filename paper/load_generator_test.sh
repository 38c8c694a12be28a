#!/usr/bin/env bash
# paper/load_generator: each load starts, works, stops on SIGTERM with exit status 0 and a count of
# the work it did, and leaves no child process behind; bad arguments are refused.
set -euo pipefail
bin="paper/load_generator"
[[ -x "$bin" ]] || bin="$(dirname "$0")/load_generator"
out="${TEST_TMPDIR:-$(mktemp -d)}"
fail=0

run_load() {  # run_load NAME SECONDS ARGS...: starts the load, waits, stops it, prints its output
  local name=$1 seconds=$2
  shift 2
  "$bin" "$@" >"$out/$name.log" 2>&1 &
  local pid=$!
  sleep "$seconds"
  local children
  children=$(pgrep -P "$pid" | wc -l || true)
  kill -TERM "$pid"
  if ! wait "$pid"; then
    echo "FAILED: $name exited with a non-zero status"; cat "$out/$name.log"; fail=1
  fi
  echo "$children" >"$out/$name.children"
  if pgrep -P "$pid" >/dev/null; then echo "FAILED: $name left children behind"; fail=1; fi
}

run_load bursty 1 bursty 2 20 20
grep -Eq '^load_generator: bursty: [1-9][0-9]* bursts of 20 ms' "$out/bursty.log" ||
  { echo "FAILED: bursty did no burst"; cat "$out/bursty.log"; fail=1; }
run_load spin 1 spin 1
grep -Eq '^load_generator: spin: [1-9][0-9]* slices of 10 ms' "$out/spin.log" ||
  { echo "FAILED: spin did no work"; cat "$out/spin.log"; fail=1; }
# The compile load runs g++ children while it lives and none after it stopped.
run_load compile 2 compile 2
[[ "$(cat "$out/compile.children")" -ge 1 ]] ||
  { echo "FAILED: compile had no g++ running"; cat "$out/compile.log"; fail=1; }
grep -Eq '^load_generator: compile: [0-9]+ compiles done, 2 at a time' "$out/compile.log" ||
  { echo "FAILED: compile did not report"; cat "$out/compile.log"; fail=1; }

for bad in "" "spin" "spin 0" "bursty 2 20" "nosuch 1"; do
  # shellcheck disable=SC2086
  if "$bin" $bad >/dev/null 2>&1; then echo "FAILED: accepted '$bad'"; fail=1; fi
done
[[ $fail -eq 0 ]] && echo "load_generator: all loads start, work and stop"
exit $fail
